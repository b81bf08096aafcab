import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';

/**
 * The client side of the ingest benchmarks: bench/ingest/server.ts started as a child process
 * group, multipart uploads streamed from disk (the client never holds a whole file), and the
 * server's memory figures.
 */

const MB = 1024 * 1024;
const BOUNDARY = '----quire-bench-boundary';

function* fileChunks(path: string): Iterable<Buffer> {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(MB);
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) return;
      yield Buffer.from(buffer.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}

/** One `files[]` part: its name, its size and its bytes as they are read or made. */
export interface UploadPart {
  name: string;
  size: number;
  chunks: () => Iterable<Buffer>;
}

/** A file on disk as a part, read a megabyte at a time. */
export function filePart(name: string, path: string): UploadPart {
  return { name, size: statSync(path).size, chunks: () => fileChunks(path) };
}

/** POSTs `parts` as `files[]` parts of one multipart body, streamed as the server takes it. */
export function postParts(
  port: number,
  path: string,
  parts: UploadPart[],
): Promise<{ status: number; body: string }> {
  const head = (name: string) =>
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="files[]"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
  const tail = Buffer.from(`--${BOUNDARY}--\r\n`);
  let length = tail.length;
  for (const part of parts) length += head(part.name).length + part.size + 2;
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: {
          'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
          'content-length': length,
        },
      },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    (async () => {
      const write = (chunk: Buffer | string) =>
        new Promise<void>((ok) => {
          if (req.write(chunk)) ok();
          else req.once('drain', ok);
        });
      for (const part of parts) {
        await write(head(part.name));
        for (const chunk of part.chunks()) await write(chunk);
        await write('\r\n');
      }
      req.end(tail);
    })().catch(reject);
  });
}

/** POSTs `files` (paths on disk) as `files[]` parts of one multipart body. */
export function postFiles(
  port: number,
  path: string,
  files: Array<{ name: string; path: string }>,
): Promise<{ status: number; body: string }> {
  return postParts(
    port,
    path,
    files.map((f) => filePart(f.name, f.path)),
  );
}

/** bench/ingest/server.ts's memory (`GET /stats`), or its reset of the sampled peak. */
export function serverStats(port: number, path = '/stats', method = 'GET') {
  return new Promise<{ rss: number; peakRss: number; vmHwm: number | null }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve(JSON.parse(body)));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Starts bench/ingest/server.ts in its own process group; resolves with it and its port. */
export async function startIngestServer(
  env: Record<string, string>,
): Promise<{ server: ChildProcess; port: number }> {
  const server = spawn('npx', ['tsx', 'bench/ingest/server.ts'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (c) => {
      out += c;
      const m = /LISTENING (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    server.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
  return { server, port };
}

/** Ends the server's process group (npx, tsx and the server under them). */
export function stopIngestServer(server: ChildProcess | undefined): void {
  if (server?.pid) process.kill(-server.pid, 'SIGKILL');
}
