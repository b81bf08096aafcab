import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ORPHAN_SWEEP_CURSOR, runBlobCleanup, sweepOrphans } from '../../activities/maintenance';
import { type BlobStore, createLocalBlobStore, newUploadId, TEMPORARY_PREFIX } from '../../blobs';
import { processCleanup } from '../../blobs/cleanup';
import {
  BlobFencedError,
  blobUsage,
  CLEANUP_BACKOFF_CAP_MS,
  completeCleanup,
  fenceCleanup,
  scheduleBlobDeletion,
  workspaceUsageBytes,
} from '../../db/blobs';
import { writeMaintenanceCursor } from '../../db/maintenanceCursors';
import { withTransaction } from '../../db/pool';
import { ingestBatch } from '../../ingest/batch';
import { blobReferences } from '../support/blobReferences';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { file, png, uploadRequest, wav } from '../support/uploadFixtures';

let db: TestDatabase;
let blobDir: string;
let store: ReturnType<typeof createLocalBlobStore>;
let ws: number;
const { storedBlob, referenceBlob, cleanupIdFor } = blobReferences(() => ({
  pool: db.pool,
  store,
  workspaceId: ws,
}));
const HOUR = 60 * 60 * 1000;

async function objectFiles(): Promise<string[]> {
  return (await readdir(blobDir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(blobDir.length + 1));
}

async function deletePage(pageId: number): Promise<string> {
  return withTransaction(db.pool, async (tx) => {
    const { rows } = await tx.query('SELECT blob_key FROM pages WHERE id = $1', [pageId]);
    await tx.query('DELETE FROM page_revisions WHERE page_id = $1', [pageId]);
    await tx.query('DELETE FROM pages WHERE id = $1', [pageId]);
    await scheduleBlobDeletion(tx, ws, rows[0].blob_key);
    return rows[0].blob_key as string;
  });
}

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(async () => {
  if (blobDir) await rm(blobDir, { recursive: true, force: true });
  blobDir = await mkdtemp(join(tmpdir(), 'quire-blobs-it-'));
  store = createLocalBlobStore(blobDir);
  const { rows } = await db.pool.query(
    `INSERT INTO workspaces (name) VALUES ('blobs') RETURNING id`,
  );
  ws = rows[0].id;
});

describe('U3 fenced deletion', () => {
  it('U3 a reference created concurrently with a fenced delete never points at a deleted blob (100 iterations)', async () => {
    let referenced = 0;
    let deleted = 0;
    for (let i = 0; i < 100; i++) {
      const key = await storedBlob(png(2, 2));
      await scheduleBlobDeletion(db.pool, ws, key);
      const id = await cleanupIdFor(key);
      const jitter = () => new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
      const [reference, cleanup] = await Promise.allSettled([
        jitter().then(() => referenceBlob(key, `race-${i}`)),
        jitter().then(() => processCleanup(db.pool, store, id, new Date())),
      ]);
      if (cleanup.status === 'rejected') throw cleanup.reason;
      const blob = await db.pool.query(
        'SELECT delete_fenced_at, deleted_at FROM blobs WHERE key = $1',
        [key],
      );
      if (reference.status === 'fulfilled') {
        referenced++;
        expect(cleanup.value.kind).toBe('referenced');
        expect(blob.rows[0]).toEqual({ delete_fenced_at: null, deleted_at: null });
        expect(await store.exists(key)).toBe(true);
      } else {
        deleted++;
        expect(reference.reason).toBeInstanceOf(BlobFencedError);
        expect(cleanup.value.kind).toBe('deleted');
        expect(blob.rows[0].deleted_at).not.toBeNull();
        expect(await store.exists(key)).toBe(false);
      }
    }
    // The invariant over all iterations: every page's blob is live and its object present.
    const { rows } = await db.pool.query(
      'SELECT b.key, b.deleted_at, b.delete_fenced_at FROM pages p JOIN blobs b ON b.key = p.blob_key',
    );
    expect(rows).toHaveLength(referenced);
    for (const row of rows) {
      expect(row.deleted_at).toBeNull();
      expect(row.delete_fenced_at).toBeNull();
      expect(await store.exists(row.key)).toBe(true);
    }
    expect(referenced + deleted).toBe(100);
    // Both orders of the race happened, so both branches above were checked.
    expect(referenced).toBeGreaterThan(0);
    expect(deleted).toBeGreaterThan(0);
  });

  it('U1 identical bytes uploaded while an older copy is being deleted get a fresh object', async () => {
    const bytes = png(6, 6);
    const deps = { pool: db.pool, blobStore: store };
    const first = await ingestBatch(deps, ws, uploadRequest([file(bytes)]));
    const oldKey = await deletePage(first.pages[0]!.pageId);
    // The cleanup has fenced the old copy and is about to delete it.
    const fence = await fenceCleanup(db.pool, await cleanupIdFor(oldKey), new Date());
    expect(fence.kind).toBe('fenced');
    await expect(referenceBlob(oldKey, 'late')).rejects.toBeInstanceOf(BlobFencedError);

    const second = await ingestBatch(deps, ws, uploadRequest([file(bytes)]));
    const { rows } = await db.pool.query('SELECT blob_key FROM pages WHERE id = $1', [
      second.pages[0]!.pageId,
    ]);
    const newKey = rows[0].blob_key as string;
    expect(newKey).not.toBe(oldKey);
    expect(newKey.split('/')[2]!.slice(0, 64)).toBe(oldKey.split('/')[2]!.slice(0, 64));

    // The old deletion completes; the new object is untouched.
    if (fence.kind !== 'fenced') throw new Error('unreachable');
    await store.delete(fence.task.blobKey);
    await completeCleanup(db.pool, fence.task, new Date());
    expect(await store.exists(oldKey)).toBe(false);
    expect(Buffer.from(await store.readRange(newKey, 0, 1000))).toEqual(bytes);
    expect(await workspaceUsageBytes(db.pool, ws)).toBe(bytes.length);
  });

  it('U3 a referenced blob is never deleted: its cleanup row is retired instead', async () => {
    const key = await storedBlob(png(3, 3));
    await referenceBlob(key, 'kept');
    await scheduleBlobDeletion(db.pool, ws, key);
    expect(await runBlobCleanup({ pool: db.pool, blobStore: store })).toEqual({
      deleted: 0,
      referenced: 1,
      retrying: 0,
    });
    expect(await store.exists(key)).toBe(true);
    const { rows } = await db.pool.query('SELECT status FROM blob_cleanups WHERE blob_key = $1', [
      key,
    ]);
    expect(rows).toEqual([{ status: 'retired' }]);
  });

  it('U3 deletion retries without limit, backoff capped at one hour; pending cleanups keep counting against quota', async () => {
    const bytes = wav(200);
    await db.pool.query('UPDATE workspaces SET quota_bytes = $2 WHERE id = $1', [
      ws,
      bytes.length + 100,
    ]);
    const deps = { pool: db.pool, blobStore: store };
    const first = await ingestBatch(deps, ws, uploadRequest([file(bytes)]));
    const key = await deletePage(first.pages[0]!.pageId);
    let failing = true;
    const flaky: BlobStore = {
      ...store,
      delete: async (k) => {
        if (failing) throw Object.assign(new Error(`EIO at ${k}`), { code: 'EIO' });
        return store.delete(k);
      },
    };
    let now = new Date();
    let lastDelay = 0;
    for (let attempt = 1; attempt <= 12; attempt++) {
      const report = await runBlobCleanup({ pool: db.pool, blobStore: flaky, now });
      expect(report).toEqual({ deleted: 0, referenced: 0, retrying: 1 });
      const { rows } = await db.pool.query(
        `SELECT status, attempts, next_attempt_at, last_error FROM blob_cleanups
          WHERE blob_key = $1 AND reason = 'delete'`,
        [key],
      );
      expect(rows[0]).toMatchObject({ status: 'failing', attempts: attempt, last_error: 'EIO' });
      const delay = rows[0].next_attempt_at.getTime() - now.getTime();
      expect(delay).toBeGreaterThan(0);
      expect(delay).toBeLessThanOrEqual(CLEANUP_BACKOFF_CAP_MS);
      lastDelay = delay;
      // Not due before its time: a run now does nothing.
      expect(await runBlobCleanup({ pool: db.pool, blobStore: flaky, now })).toEqual({
        deleted: 0,
        referenced: 0,
        retrying: 0,
      });
      // Still counted: the workspace cannot store another copy.
      expect(await workspaceUsageBytes(db.pool, ws)).toBe(bytes.length);
      now = new Date(now.getTime() + delay);
    }
    expect(lastDelay).toBeGreaterThanOrEqual(CLEANUP_BACKOFF_CAP_MS / 2);
    await expect(ingestBatch(deps, ws, uploadRequest([file(bytes)]))).rejects.toMatchObject({
      code: 'quota_exceeded',
    });
    const usage = await blobUsage(db.pool, now);
    expect(usage.failedCleanups).toBe(1);
    expect(usage.oldestPendingCleanupAgeMs).toBeGreaterThan(HOUR);

    failing = false;
    expect(await runBlobCleanup({ pool: db.pool, blobStore: flaky, now })).toEqual({
      deleted: 1,
      referenced: 0,
      retrying: 0,
    });
    expect(await store.exists(key)).toBe(false);
    expect(await workspaceUsageBytes(db.pool, ws)).toBe(0);
    expect((await blobUsage(db.pool, now)).failedCleanups).toBe(0);
    await ingestBatch(deps, ws, uploadRequest([file(bytes)]));
  });

  it('O3 concurrent cleanup runs delete each object once and agree on the result', async () => {
    const keys: string[] = [];
    for (let i = 0; i < 20; i++) {
      const key = await storedBlob(png(2, 2 + i));
      await scheduleBlobDeletion(db.pool, ws, key);
      keys.push(key);
    }
    const reports = await Promise.all(
      [1, 2, 3].map(() => runBlobCleanup({ pool: db.pool, blobStore: store })),
    );
    expect(reports.reduce((sum, r) => sum + r.deleted, 0)).toBe(20);
    for (const key of keys) expect(await store.exists(key)).toBe(false);
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n FROM blob_cleanups WHERE blob_key = ANY($1) AND status = 'deleted'`,
      [keys],
    );
    expect(rows[0].n).toBe(20);
    expect(await workspaceUsageBytes(db.pool, ws)).toBe(0);
  });
});

describe('O3 orphan sweep', () => {
  it('O3 removes stale temporaries and unknown old objects, hands unreferenced blobs to the cleanup, keeps the rest', async () => {
    const now = new Date();
    const old = new Date(now.getTime() - 2 * HOUR);
    const deps = { pool: db.pool, blobStore: store };
    const kept = await ingestBatch(deps, ws, uploadRequest([file(png(4, 4))]));
    const unreferenced = await storedBlob(png(5, 5));
    await db.pool.query(`UPDATE blobs SET created_at = $2 WHERE key = $1`, [unreferenced, old]);
    const dir = join(blobDir, 'ws', String(ws));
    const unknownOld = `${'b'.repeat(64)}-${newUploadId()}`;
    const unknownYoung = `${'c'.repeat(64)}-${newUploadId()}`;
    await writeFile(join(dir, unknownOld), 'stray');
    await writeFile(join(dir, unknownYoung), 'in flight');
    await utimes(join(dir, unknownOld), old, old);
    await writeFile(join(dir, `${TEMPORARY_PREFIX}stale`), 'partial');
    await utimes(join(dir, `${TEMPORARY_PREFIX}stale`), old, old);

    const report = await sweepOrphans({ pool: db.pool, blobStore: store, now });
    expect(report).toMatchObject({ removedTemporaries: 1, scheduledBlobs: 1, removedObjects: 1 });
    expect(await runBlobCleanup({ pool: db.pool, blobStore: store, now })).toEqual({
      deleted: 1,
      referenced: 0,
      retrying: 0,
    });
    const keptKey = (
      await db.pool.query('SELECT blob_key FROM pages WHERE id = $1', [kept.pages[0]!.pageId])
    ).rows[0].blob_key as string;
    expect((await objectFiles()).sort()).toEqual([keptKey, `ws/${ws}/${unknownYoung}`].sort());
    // Idempotent: a second sweep finds nothing more.
    expect(await sweepOrphans({ pool: db.pool, blobStore: store, now })).toMatchObject({
      removedTemporaries: 0,
      scheduledBlobs: 0,
      removedObjects: 0,
    });
  });
  it('D13 the sweep works through the store in slices, resuming where the last run stopped', async () => {
    const now = new Date();
    const old = new Date(now.getTime() - 2 * HOUR);
    await writeMaintenanceCursor(db.pool, ORPHAN_SWEEP_CURSOR, '');
    const dir = join(blobDir, 'ws', String(ws));
    await mkdir(dir, { recursive: true });
    const strays = ['a', 'b', 'c', 'd', 'e'].map((c) => `${c.repeat(64)}-${newUploadId()}`);
    for (const name of strays) {
      await writeFile(join(dir, name), 'stray');
      await utimes(join(dir, name), old, old);
    }
    const slice = () => sweepOrphans({ pool: db.pool, blobStore: store, now, sliceObjects: 2 });
    expect(await slice()).toMatchObject({ listed: 2, removedObjects: 2, wrapped: 0 });
    expect((await objectFiles()).sort()).toEqual(strays.slice(2).map((n) => `ws/${ws}/${n}`));
    expect(await slice()).toMatchObject({ listed: 2, removedObjects: 2, wrapped: 0 });
    expect(await slice()).toMatchObject({ listed: 1, removedObjects: 1, wrapped: 1 });
    expect(await objectFiles()).toEqual([]);
    // Wrapped: the next run starts from the top again and finds what arrived meanwhile.
    await writeFile(join(dir, strays[0]!), 'stray again');
    await utimes(join(dir, strays[0]!), old, old);
    expect(await slice()).toMatchObject({ listed: 1, removedObjects: 1, wrapped: 1 });
  });
});
