import { mkdtempSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import {
  BlobStoreUnavailableError,
  canonicalKeyFor,
  newUploadId,
  temporaryKeyFor,
} from '../../blobs';
import { createS3BlobStore } from '../../blobs/s3';

/**
 * The S3-compatible store cannot reach a real bucket here. This test drives it against an
 * in-memory stand-in for `S3Client.send`, which checks the calls it makes (keys, prefix,
 * copy-then-delete promotion, ranged reads, idempotent deletes), not S3 itself.
 */
function fakeS3() {
  const objects = new Map<string, { body: Buffer; modified: Date }>();
  const client = new S3Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
  });
  const calls: string[] = [];
  // biome-ignore lint/suspicious/noExplicitAny: the stand-in accepts every command type
  (client as any).send = async (command: any) => {
    const name = command.constructor.name as string;
    const input = command.input;
    calls.push(`${name} ${input.Key ?? input.Prefix ?? ''}`);
    switch (name) {
      case 'PutObjectCommand': {
        const chunks: Buffer[] = [];
        const body = input.Body;
        if (Buffer.isBuffer(body) || body instanceof Uint8Array) chunks.push(Buffer.from(body));
        else for await (const c of body) chunks.push(Buffer.from(c));
        objects.set(input.Key, { body: Buffer.concat(chunks), modified: new Date() });
        return { ETag: '"x"' };
      }
      case 'CopyObjectCommand': {
        const source = decodeURIComponent(input.CopySource.slice(input.Bucket.length + 1));
        const object = objects.get(source);
        if (!object) throw Object.assign(new Error('NoSuchKey'), { name: 'NoSuchKey' });
        objects.set(input.Key, { ...object });
        return {};
      }
      case 'DeleteObjectCommand':
        objects.delete(input.Key);
        return {};
      case 'HeadObjectCommand':
        if (!objects.has(input.Key))
          throw Object.assign(new Error('NotFound'), { name: 'NotFound' });
        return {};
      case 'GetObjectCommand': {
        const object = objects.get(input.Key);
        if (!object) throw Object.assign(new Error('NoSuchKey'), { name: 'NoSuchKey' });
        const [from, to] = (/bytes=(\d+)-(\d+)/.exec(input.Range ?? '') ?? []).slice(1).map(Number);
        const bytes = from === undefined ? object.body : object.body.subarray(from, (to ?? 0) + 1);
        return { Body: { transformToByteArray: async () => new Uint8Array(bytes) } };
      }
      case 'ListObjectsV2Command':
        return {
          Contents: [...objects.entries()]
            .filter(([k]) => k.startsWith(input.Prefix ?? ''))
            .map(([Key, o]) => ({ Key, Size: o.body.length, LastModified: o.modified })),
          IsTruncated: false,
        };
      default:
        throw new Error(`unexpected command ${name}`);
    }
  };
  return { client, objects, calls };
}

async function* chunks(...parts: string[]) {
  for (const p of parts) yield Buffer.from(p);
}

describe('U1 S3-compatible blob store (against an in-memory stand-in)', () => {
  it('U1 writes a temporary, promotes it by copy then delete, reads ranges, deletes idempotently', async () => {
    const { client, objects, calls } = fakeS3();
    const store = createS3BlobStore({ bucket: 'quire', prefix: 'p/', client });
    const uploadId = newUploadId();
    const temp = temporaryKeyFor(4, uploadId);
    const written = await store.writeTemporary(temp, chunks('hello ', 'world'));
    expect(written.size).toBe(11);
    expect([...objects.keys()]).toEqual([`p/${temp}`]);
    const key = canonicalKeyFor(4, written.sha256, uploadId);
    await store.promote(temp, key);
    expect([...objects.keys()]).toEqual([`p/${key}`]);
    expect(Buffer.from(await store.readRange(key, 6, 5)).toString()).toBe('world');
    expect(await store.exists(key)).toBe(true);
    const listed = [];
    for await (const o of store.list()) listed.push(o.key);
    expect(listed).toEqual([key]);
    await store.delete(key);
    await store.delete(key);
    expect(await store.exists(key)).toBe(false);
    expect(calls.some((c) => c.startsWith('CopyObjectCommand'))).toBe(true);
  });

  it('U1 sweeps only stale temporaries of its own prefix', async () => {
    const { client, objects } = fakeS3();
    const store = createS3BlobStore({ bucket: 'quire', client });
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    objects.set('ws/1/.quire-upload-old', { body: Buffer.from('x'), modified: old });
    objects.set('ws/1/.quire-upload-new', { body: Buffer.from('x'), modified: new Date() });
    objects.set(`ws/1/${'a'.repeat(64)}-id`, { body: Buffer.from('x'), modified: old });
    expect(await store.sweepStaleTemporaries()).toEqual({ removed: 1 });
    expect([...objects.keys()].sort()).toEqual(
      [`ws/1/${'a'.repeat(64)}-id`, 'ws/1/.quire-upload-new'].sort(),
    );
  });
});

/**
 * D7: a real S3 client against a server on the loopback that stops answering: it accepts
 * connections, and answers nothing (`silent`), or the headers and a first part of the body,
 * then nothing (`stalled`). Every call must fail within its bound, as the store's outage.
 */
async function stoppedServer(): Promise<{ endpoint: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => {
    if (request.url?.includes('stalled')) {
      response.writeHead(200, { 'content-length': '1000', 'content-type': 'image/png' });
      response.write(Buffer.alloc(100));
    }
    // Otherwise nothing: neither an answer nor a close.
  });
  server.on('connection', (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('D7 an object store that stops answering', () => {
  it('D7 every call to a store that stops answering fails within its bound as blob_store_unavailable, a body gone silent mid-stream too', async () => {
    const server = await stoppedServer();
    const cacheDir = mkdtempSync(join(tmpdir(), 'quire-s3-bounds-'));
    const store = createS3BlobStore({
      bucket: 'quire',
      cacheDir,
      clientConfig: {
        endpoint: server.endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
        maxAttempts: 1,
        requestHandler: { connectionTimeout: 500, socketTimeout: 500 },
      },
    });
    const bounded = async (call: () => Promise<unknown>) => {
      const started = Date.now();
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(BlobStoreUnavailableError);
      expect((error as BlobStoreUnavailableError).code).toBe('blob_store_unavailable');
      // The bound and a margin for a loaded machine, far from the heartbeat timeout.
      expect(Date.now() - started).toBeLessThan(2_500);
      return error;
    };
    try {
      await bounded(() => store.exists('ws/1/silent'));
      await bounded(() => store.readRange('ws/1/silent', 0, 10));
      await bounded(() => store.readRange('ws/1/stalled', 0, 1000));
      await bounded(() => store.localPath('ws/1/silent'));
      await bounded(() => store.localPath('ws/1/stalled'));
      await bounded(() => store.delete('ws/1/silent'));
      await bounded(() => store.writeTemporary('ws/1/.quire-upload-x', chunks('bytes')));
      // Nothing half-fetched is left in the cache for an engine to read.
      expect(readdirSync(cacheDir)).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
