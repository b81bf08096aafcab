import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBlobCleanup } from '../../activities/maintenance';
import { auditInvariants } from '../../db/audit';
import { blobUsage } from '../../db/blobs';
import { ConflictError } from '../../db/errors';
import { deleteItem } from '../../db/items';
import { listAttempts } from '../../db/jobs';
import { getPage } from '../../db/pages';
import type { QuireWorker } from '../../worker/createWorker';
import { ingestWithJobs } from '../support/ingest';
import { createTestQuire, type TestQuire } from '../support/quire';
import { png } from '../support/uploadFixtures';

/** U3: an item is deleted through the application path, children first, blobs to cleanup. */
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire();
  ws = await quire.workspace();
  worker = await quire.newWorker();
  running = worker.run();
});
afterAll(async () => {
  worker?.shutdown();
  await running;
  await quire?.close();
});

async function ingestItem(itemId: string, simulated: Record<string, unknown>) {
  const form = new FormData();
  form.append('itemId', itemId);
  for (const size of [40, 50]) {
    form.append(
      'files[]',
      new Blob([new Uint8Array(png(size, size))], { type: 'image/png' }),
      `p${size}.png`,
    );
  }
  return ingestWithJobs(quire, ws, form, { provider: 'simulated', options: { simulated } });
}

describe('item deletion (U3)', () => {
  it('U3 deletes children first, keeps the attempt audit, and hands every blob to the fenced cleanup', async () => {
    const { result, records } = await ingestItem('register-1', { lines: 3 });
    for (const r of records) await quire.temporal.workflow.getHandle(r.workflowId).result();
    const keys = (
      await quire.db.pool.query('SELECT blob_key FROM pages WHERE id = ANY($1)', [
        result.pages.map((p) => p.pageId),
      ])
    ).rows.map((r) => r.blob_key as string);
    expect(keys).toHaveLength(2);
    for (const key of keys) expect(await quire.blobStore.exists(key)).toBe(true);
    const before = await blobUsage(quire.db.pool);
    expect(before.workspaces.find((w) => w.workspaceId === ws)?.bytes ?? 0).toBeGreaterThan(0);

    const deleted = await deleteItem(quire.db.pool, ws, 'register-1');
    expect(deleted).toEqual({ itemId: 'register-1', pages: 2, blobsHandedToCleanup: 2 });
    for (const page of result.pages)
      expect(await getPage(quire.db.pool, ws, page.pageId)).toBeUndefined();
    const leftovers = await quire.db.pool.query(
      `SELECT (SELECT count(*) FROM page_revisions WHERE page_id = ANY($1))::int AS revisions,
              (SELECT count(*) FROM job_checkpoints WHERE job_id = ANY($2))::int AS checkpoints,
              (SELECT count(*) FROM pages WHERE id = ANY($1) AND search_text <> '')::int AS texts`,
      [result.pages.map((p) => p.pageId), records.map((r) => r.id)],
    );
    expect(leftovers.rows[0]).toEqual({ revisions: 0, checkpoints: 0, texts: 0 });
    // A2: the audit stays.
    for (const r of records)
      expect((await listAttempts(quire.db.pool, r.id)).map((a) => a.outcome)).toEqual([
        'completed',
      ]);
    // The bytes count against quota until the cleanup has really deleted them.
    const pending = await blobUsage(quire.db.pool);
    expect(pending.pendingCleanups).toBeGreaterThanOrEqual(2);
    await runBlobCleanup({ pool: quire.db.pool, blobStore: quire.blobStore });
    for (const key of keys) expect(await quire.blobStore.exists(key)).toBe(false);
    const after = await blobUsage(quire.db.pool);
    expect(after.workspaces.find((w) => w.workspaceId === ws)?.bytes ?? 0).toBe(0);
    await expect(deleteItem(quire.db.pool, ws, 'register-1')).rejects.toThrow(/not found/);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });

  it('U3 an item with an active job is refused and nothing changes', async () => {
    const { result, records } = await ingestItem('register-2', { lines: 40, latencyMs: 100 });
    await expect(deleteItem(quire.db.pool, ws, 'register-2')).rejects.toBeInstanceOf(ConflictError);
    for (const page of result.pages)
      expect(await getPage(quire.db.pool, ws, page.pageId)).toBeDefined();
    for (const r of records) await quire.client.cancelJob(ws, r.id);
    const deleted = await deleteItem(quire.db.pool, ws, 'register-2');
    expect(deleted.pages).toBe(2);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });
});

describe('batch cancel releases incomplete uploads (J5)', () => {
  it('J5 pages never transcribed go to cleanup after the cancel; transcribed pages stay', async () => {
    const done = await ingestItem('register-3', { lines: 2 });
    for (const r of done.records) await quire.temporal.workflow.getHandle(r.workflowId).result();
    const slow = await ingestItem('register-4', { lines: 40, latencyMs: 100 });
    const slowKeys = (
      await quire.db.pool.query('SELECT blob_key FROM pages WHERE id = ANY($1)', [
        slow.result.pages.map((p) => p.pageId),
      ])
    ).rows.map((r) => r.blob_key as string);

    const canceled = await quire.client.cancelBatch(ws, slow.result.batchId);
    expect(canceled).toEqual({ canceled: 2, releasedPages: 2 });
    for (const page of slow.result.pages)
      expect(await getPage(quire.db.pool, ws, page.pageId)).toBeUndefined();
    await runBlobCleanup({ pool: quire.db.pool, blobStore: quire.blobStore });
    for (const key of slowKeys) expect(await quire.blobStore.exists(key)).toBe(false);
    for (const r of slow.records) {
      expect((await listAttempts(quire.db.pool, r.id)).every((a) => a.outcome !== 'running')).toBe(
        true,
      );
    }

    // A batch whose work is done keeps it, canceled or not.
    const kept = await quire.client.cancelBatch(ws, done.result.batchId);
    expect(kept).toEqual({ canceled: 0, releasedPages: 0 });
    for (const page of done.result.pages) {
      expect((await getPage(quire.db.pool, ws, page.pageId))?.revision).toBe(1);
    }
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });
});
