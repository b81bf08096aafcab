import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildImageDerivatives, runBlobCleanup } from '../../activities/maintenance';
import {
  BlobStoreUnavailableError,
  canonicalKeyFor,
  newUploadId,
  TEMPORARY_PREFIX,
  temporaryKeyFor,
} from '../../blobs';
import { processCleanup } from '../../blobs/cleanup';
import { createBlobStore } from '../../blobs/fromConfig';
import { parseConfig } from '../../core/config';
import { BlobFencedError, scheduleBlobDeletion, workspaceUsageBytes } from '../../db/blobs';
import { deleteItem } from '../../db/items';
import { withTransaction } from '../../db/pool';
import { ingestBatch } from '../../ingest/batch';
import { s3ClientFor } from '../../scripts/lib/objectServer';
import { blobReferences, once } from '../support/blobReferences';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startTestObjectServer, type TestObjectServer } from '../support/objectServer';
import { manifestoTiff } from '../support/tiffMasters';
import { file, png, uploadRequest, wav } from '../support/uploadFixtures';

/**
 * U1-U3 against a real S3-compatible server (versitygw on the loopback), not a stand-in: the
 * store every worker and web replica of cluster mode shares (D2).
 */
let server: TestObjectServer;
let db: TestDatabase;
let store: ReturnType<TestObjectServer['store']>;
let ws: number;
const { storedBlob, referenceBlob, cleanupIdFor } = blobReferences(() => ({
  pool: db.pool,
  store,
  workspaceId: ws,
}));
const HOUR = 60 * 60 * 1000;
/** The large-file size; 500 MB unless a slower machine asks for less. */
const LARGE_MB = Number(process.env.QUIRE_TEST_S3_LARGE_MB ?? 500);

async function allKeys(): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list()) keys.push(o.key);
  return keys;
}

async function openMultipartUploads(): Promise<number> {
  const client = s3ClientFor(server.settings);
  try {
    const out = await client.send(
      new ListMultipartUploadsCommand({ Bucket: server.settings.bucket }),
    );
    return out.Uploads?.length ?? 0;
  } finally {
    client.destroy();
  }
}

beforeAll(async () => {
  [server, db] = await Promise.all([startTestObjectServer(), createTestDatabase()]);
  store = server.store();
}, 900_000);
afterAll(async () => {
  await server?.close();
  await db?.drop();
});
beforeEach(async () => {
  const { rows } = await db.pool.query(`INSERT INTO workspaces (name) VALUES ('s3') RETURNING id`);
  ws = rows[0].id;
  if (!server.process.running()) await server.process.start();
});

describe('S3 blob store on a real object server (U1-U3)', () => {
  it('U1 QUIRE_BLOB_STORE=s3 selects the bucket store; a missing bucket is refused at start', () => {
    const endpoint = `http://127.0.0.1:${server.settings.port}`;
    const config = parseConfig({
      QUIRE_BLOB_STORE: 's3',
      QUIRE_S3_ENDPOINT: endpoint,
      QUIRE_S3_BUCKET: server.settings.bucket,
      QUIRE_S3_ACCESS_KEY_ID: server.settings.accessKeyId,
      QUIRE_S3_SECRET_ACCESS_KEY: server.settings.secretAccessKey,
    });
    expect(createBlobStore(config).kind).toBe('s3');
    expect(createBlobStore(parseConfig({})).kind).toBe('local');
    expect(() => parseConfig({ QUIRE_BLOB_STORE: 's3' })).toThrow(/QUIRE_S3_BUCKET/);
    expect(() =>
      parseConfig({ QUIRE_BLOB_STORE: 's3', QUIRE_S3_BUCKET: 'b', QUIRE_S3_ACCESS_KEY_ID: 'k' }),
    ).toThrow(/together/);
  });

  it('U1 writes a temporary, promotes it, reads ranges, lists canonical keys only, deletes idempotently', async () => {
    const uploadId = newUploadId();
    const temp = temporaryKeyFor(ws, uploadId);
    const bytes = randomBytes(70_000);
    const written = await store.writeTemporary(temp, once(bytes));
    expect(written).toEqual({
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    expect(await allKeys()).not.toContain(temp);
    const key = canonicalKeyFor(ws, written.sha256, uploadId);
    await store.promote(temp, key);
    expect(await store.exists(temp)).toBe(false);
    expect(await store.exists(key)).toBe(true);
    expect(Buffer.from(await store.readRange(key, 100, 50))).toEqual(bytes.subarray(100, 150));
    expect(Buffer.from(await store.readRange(key, bytes.length - 10, 50))).toEqual(
      bytes.subarray(bytes.length - 10),
    );
    expect(await store.readRange(key, bytes.length + 5, 10)).toHaveLength(0);
    expect(await allKeys()).toContain(key);
    const path = await store.localPath(key);
    expect(createHash('sha256').update(readFileSync(path)).digest('hex')).toBe(written.sha256);
    await store.delete(key);
    await store.delete(key);
    expect(await store.exists(key)).toBe(false);
  });

  it('D13 the listing is in key order and resumes after a key; temporaries only when asked, marked', async () => {
    const keys: string[] = [];
    for (const n of [1, 2, 3]) {
      const uploadId = newUploadId();
      const temp = temporaryKeyFor(ws, uploadId);
      const written = await store.writeTemporary(temp, once(Buffer.from(`object ${n}`)));
      const key = canonicalKeyFor(ws, written.sha256, uploadId);
      await store.promote(temp, key);
      keys.push(key);
    }
    keys.sort();
    const stray = temporaryKeyFor(ws, newUploadId());
    await store.writeTemporary(stray, once(Buffer.from('partial')));
    const mine = (k: string) => k.startsWith(`ws/${ws}/`);
    const everything = [...keys.map((key) => ({ key })), { key: stray, temporary: true }];
    // Keys sort as bytes: a temporary's `.quire-upload-` comes before the hex of canonical ones.
    const expected = (after: string) =>
      everything.filter((o) => o.key > after).sort((a, b) => (a.key < b.key ? -1 : 1));
    for (const after of [`ws/${ws}/`, keys[0]!]) {
      const listed: Array<{ key: string; temporary?: boolean }> = [];
      for await (const o of store.list({ after, temporaries: true })) {
        if (mine(o.key)) listed.push({ key: o.key, ...(o.temporary ? { temporary: true } : {}) });
      }
      expect(listed, after).toEqual(expected(after));
    }
    expect((await allKeys()).filter(mine)).toEqual(keys);
    for (const key of [...keys, stray]) await store.delete(key);
  });

  it(`U1 a ${LARGE_MB} MB file goes up in parts with flat memory and reads back byte for byte`, async () => {
    const chunk = randomBytes(1024 * 1024);
    const expected = createHash('sha256');
    async function* large() {
      for (let i = 0; i < LARGE_MB; i++) {
        const part = Buffer.from(chunk);
        part.writeUInt32BE(i, 0);
        expected.update(part);
        yield part;
      }
    }
    global.gc?.();
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 50);
    const uploadId = newUploadId();
    const temp = temporaryKeyFor(ws, uploadId);
    let written: Awaited<ReturnType<typeof store.writeTemporary>>;
    try {
      written = await store.writeTemporary(temp, large());
    } finally {
      clearInterval(sampler);
    }
    const growthMb = (peak - baseline) / 1024 / 1024;
    process.stdout.write(
      `${JSON.stringify({ s3LargeUploadMb: LARGE_MB, rssGrowthMb: Math.round(growthMb) })}\n`,
    );
    expect(written.size).toBe(LARGE_MB * 1024 * 1024);
    expect(written.sha256).toBe(expected.digest('hex'));
    // Parts of 8 MiB, two in flight: memory is bounded by the parts, not by the file.
    expect(growthMb).toBeLessThan(Math.min(200, LARGE_MB / 2));
    const key = canonicalKeyFor(ws, written.sha256, uploadId);
    await store.promote(temp, key);
    const readBack = createHash('sha256');
    let size = 0;
    for await (const piece of store.read(key)) {
      readBack.update(piece);
      size += piece.length;
    }
    expect(size).toBe(written.size);
    expect(readBack.digest('hex')).toBe(written.sha256);
    expect(await openMultipartUploads()).toBe(0);
    await store.delete(key);
  }, 600_000);

  it('U1 an upload over its limit is aborted: no object and no multipart upload left behind', async () => {
    const temp = temporaryKeyFor(ws, newUploadId());
    async function* twentyMb() {
      for (let i = 0; i < 20; i++) yield randomBytes(1024 * 1024);
    }
    await expect(
      store.writeTemporary(temp, twentyMb(), { maxBytes: 12 * 1024 * 1024 }),
    ).rejects.toMatchObject({ code: 'file_too_large' });
    expect(await store.exists(temp)).toBe(false);
    expect(await openMultipartUploads()).toBe(0);
  });

  it('U1 only temporaries older than the grace period are swept; canonical objects stay', async () => {
    const temp = temporaryKeyFor(ws, newUploadId());
    await store.writeTemporary(temp, once(Buffer.from('partial')));
    const key = await storedBlob(png(2, 2));
    // Just written: recent, kept.
    expect((await store.sweepStaleTemporaries(HOUR, new Date())).removed).toBe(0);
    expect(await store.exists(temp)).toBe(true);
    // Two hours on, the same temporary is stale; the canonical object is never a temporary.
    const { removed } = await store.sweepStaleTemporaries(HOUR, new Date(Date.now() + 2 * HOUR));
    expect(removed).toBeGreaterThanOrEqual(1);
    expect(await store.exists(temp)).toBe(false);
    expect(await store.exists(key)).toBe(true);
    expect(temp.split('/').at(-1)?.startsWith(TEMPORARY_PREFIX)).toBe(true);
  });

  it('U3 a reference created concurrently with a fenced delete never points at a deleted object (30 iterations)', async () => {
    let referenced = 0;
    let deleted = 0;
    for (let i = 0; i < 30; i++) {
      const key = await storedBlob(png(2, 2));
      await scheduleBlobDeletion(db.pool, ws, key);
      const id = await cleanupIdFor(key);
      const jitter = () => new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
      const [reference, cleanup] = await Promise.allSettled([
        jitter().then(() => referenceBlob(key, `race-${i}`)),
        jitter().then(() => processCleanup(db.pool, store, id, new Date())),
      ]);
      if (cleanup.status === 'rejected') throw cleanup.reason;
      if (reference.status === 'fulfilled') {
        referenced++;
        expect(cleanup.value.kind).toBe('referenced');
        expect(await store.exists(key)).toBe(true);
      } else {
        deleted++;
        expect(reference.reason).toBeInstanceOf(BlobFencedError);
        expect(cleanup.value.kind).toBe('deleted');
        expect(await store.exists(key)).toBe(false);
      }
    }
    const { rows } = await db.pool.query(
      'SELECT b.key FROM pages p JOIN blobs b ON b.key = p.blob_key WHERE p.workspace_id = $1',
      [ws],
    );
    expect(rows).toHaveLength(referenced);
    for (const row of rows) expect(await store.exists(row.key)).toBe(true);
    expect(referenced + deleted).toBe(30);
  });

  it('U3 with the object server down a cleanup records blob_store_unavailable, keeps counting against quota, and deletes once it is back', async () => {
    const bytes = wav(200);
    const deps = { pool: db.pool, blobStore: store };
    const batch = await ingestBatch(deps, ws, uploadRequest([file(bytes)]));
    const key = await withTransaction(db.pool, async (tx) => {
      const pageId = batch.pages[0]!.pageId;
      const { rows } = await tx.query('SELECT blob_key FROM pages WHERE id = $1', [pageId]);
      await tx.query('DELETE FROM page_revisions WHERE page_id = $1', [pageId]);
      await tx.query('DELETE FROM pages WHERE id = $1', [pageId]);
      await scheduleBlobDeletion(tx, ws, rows[0].blob_key);
      return rows[0].blob_key as string;
    });
    await server.process.kill('SIGKILL');
    const now = new Date();
    expect(await runBlobCleanup({ pool: db.pool, blobStore: store, now })).toEqual({
      deleted: 0,
      referenced: 0,
      retrying: 1,
    });
    const failing = await db.pool.query(
      `SELECT status, last_error, next_attempt_at FROM blob_cleanups WHERE blob_key = $1 AND reason = 'delete'`,
      [key],
    );
    expect(failing.rows[0]).toMatchObject({
      status: 'failing',
      last_error: 'blob_store_unavailable',
    });
    expect(await workspaceUsageBytes(db.pool, ws)).toBe(bytes.length);

    await server.process.start();
    const due = new Date(failing.rows[0].next_attempt_at.getTime() + 1);
    expect(await runBlobCleanup({ pool: db.pool, blobStore: store, now: due })).toEqual({
      deleted: 1,
      referenced: 0,
      retrying: 0,
    });
    expect(await store.exists(key)).toBe(false);
    expect(await workspaceUsageBytes(db.pool, ws)).toBe(0);
  });

  it('U2 D3 an upload while the object server is down fails with blob_store_unavailable; nothing stays but a cleanup that finishes once it is back', async () => {
    await server.process.kill('SIGKILL');
    const deps = { pool: db.pool, blobStore: store };
    const failure = await ingestBatch(deps, ws, uploadRequest([file(png(4, 4))])).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(BlobStoreUnavailableError);
    expect(failure).toMatchObject({ code: 'blob_store_unavailable', kind: 'unavailable' });
    const pages = await db.pool.query(
      'SELECT count(*)::int AS n FROM pages WHERE workspace_id = $1',
      [ws],
    );
    expect(pages.rows[0].n).toBe(0);
    await server.process.start();
    const later = new Date(Date.now() + 2 * HOUR);
    await runBlobCleanup({ pool: db.pool, blobStore: store, now: later });
    expect(await workspaceUsageBytes(db.pool, ws)).toBe(0);
    const open = await db.pool.query(
      `SELECT count(*)::int AS n FROM blob_cleanups WHERE workspace_id = $1 AND status IN ('staged','due','failing')`,
      [ws],
    );
    expect(open.rows[0].n).toBe(0);
    expect((await allKeys()).filter((k) => k.startsWith(`ws/${ws}/`))).toEqual([]);
  });

  it("I4 a TIFF page's pyramidal derivative is kept in the bucket, counted against quota, served as tiles and removed with its page", async () => {
    const ingested = await ingestBatch(
      { pool: db.pool, blobStore: store },
      ws,
      uploadRequest([
        { name: 'itemId', value: 'manifesto' },
        file(await manifestoTiff(0.5), 'm.tif'),
      ]),
    );
    const pageId = ingested.pages[0]!.pageId;
    const before = await workspaceUsageBytes(db.pool, ws);
    await buildImageDerivatives({ pool: db.pool, blobStore: store });
    const { rows } = await db.pool.query(
      `SELECT p.derivative_key, b.size_bytes FROM pages p JOIN blobs b ON b.key = p.derivative_key WHERE p.id = $1`,
      [pageId],
    );
    const key = rows[0].derivative_key as string;
    expect(await store.exists(key)).toBe(true);
    expect(await workspaceUsageBytes(db.pool, ws)).toBe(before + Number(rows[0].size_bytes));
    // A tile read from the bucket's copy through the Image API route, as a web replica does.
    const { configureWeb } = await import('../../web/lib/server');
    configureWeb(
      parseConfig({
        DATABASE_URL: db.url,
        QUIRE_SECRET_KEY: 's3-iiif-test-secret-key-0123456789abcdef',
        QUIRE_PUBLIC_URL: 'https://quire.test',
        QUIRE_BLOB_STORE: 's3',
        QUIRE_S3_ENDPOINT: `http://127.0.0.1:${server.settings.port}`,
        QUIRE_S3_BUCKET: server.settings.bucket,
        QUIRE_S3_ACCESS_KEY_ID: server.settings.accessKeyId,
        QUIRE_S3_SECRET_ACCESS_KEY: server.settings.secretAccessKey,
      }),
    );
    const { publishPage } = await import('../../db/pages');
    await publishPage(db.pool, { workspaceId: ws, pageId, expectedRevision: 0 });
    const route = await import(
      '../../web/app/iiif/[ws]/image/[pageId]/[region]/[size]/[rotation]/[file]/route'
    );
    const response = await route.GET(new Request('https://quire.test/iiif'), {
      params: Promise.resolve({
        ws: String(ws),
        pageId: String(pageId),
        region: '0,0,512,512',
        size: '256,',
        rotation: '0',
        file: 'default.jpg',
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-quire-image-source')).toBe('derivative');
    const meta = await sharp(Buffer.from(await response.arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 256, 256]);
    const { pool } = await import('../../web/lib/server');
    await pool().end();

    expect((await deleteItem(db.pool, ws, 'manifesto')).blobsHandedToCleanup).toBe(2);
    await runBlobCleanup({ pool: db.pool, blobStore: store });
    expect(await store.exists(key)).toBe(false);
    expect((await allKeys()).filter((k) => k.startsWith(`ws/${ws}/`))).toEqual([]);
    expect(await workspaceUsageBytes(db.pool, ws)).toBe(0);
  });
});
