import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Readable } from 'node:stream';
import { createLocalBlobStore } from '../../blobs';
import { createPool } from '../../db/pool';
import { ingestBatch } from '../../ingest/batch';
import { httpErrorOf } from '../../web/lib/errors';

/**
 * The ingest behind a bare HTTP server, standing in for the web process so its memory can be
 * measured alone: `POST /ws/<id>/batches` ingests, `GET /stats` reports memory, `POST /reset`
 * resets the sampled peak. Prints `LISTENING <port>` when ready.
 */
const pool = createPool(process.env.DATABASE_URL!, 4);
const blobStore = createLocalBlobStore(process.env.QUIRE_BLOB_DIR!);
let peakRss = process.memoryUsage().rss;
setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 20).unref();

const vmHwmBytes = () => {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return match ? Number(match[1]) * 1024 : null;
};

const server = createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ rss: process.memoryUsage().rss, peakRss, vmHwm: vmHwmBytes() }));
    return;
  }
  if (req.method === 'POST' && req.url === '/reset') {
    globalThis.gc?.();
    peakRss = process.memoryUsage().rss;
    res.end(JSON.stringify({ rss: peakRss }));
    return;
  }
  const match = /^\/ws\/(\d+)\/batches$/.exec(req.url ?? '');
  if (req.method !== 'POST' || !match) {
    res.statusCode = 404;
    res.end();
    return;
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
  }
  const request = new Request(`http://localhost${req.url}`, {
    method: 'POST',
    headers,
    body: Readable.toWeb(req) as ReadableStream<Uint8Array>,
    duplex: 'half',
  } as RequestInit);
  try {
    const result = await ingestBatch(
      { pool, blobStore, publicBaseUrl: process.env.QUIRE_PUBLIC_URL || undefined },
      Number(match[1]),
      request,
    );
    res.statusCode = 201;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(result));
  } catch (error) {
    const mapped = httpErrorOf(error);
    res.statusCode = mapped?.status ?? 500;
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify(mapped?.body ?? { error: { code: 'internal', message: 'internal error' } }),
    );
  }
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`LISTENING ${typeof address === 'object' && address ? address.port : 0}\n`);
});
