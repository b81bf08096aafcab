import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { segmentsOf } from '../../core/annotation';
import { auditInvariants } from '../../db/audit';
import { listAttempts } from '../../db/jobs';
import { getPage } from '../../db/pages';
import { createProviderRegistry } from '../../providers/registry';
import { NativeTesseractProvider } from '../../providers/tesseractNative';
import type { QuireWorker } from '../../worker/createWorker';
import { MANIFESTO_PAGE, makeTempDir, removeDir } from '../support/fixtures';
import { ingestWithJobs } from '../support/ingest';
import { createTestQuire, type TestQuire } from '../support/quire';

/**
 * P2 through the workflow: a worker with two engine slots and the default concurrency runs
 * two pages of the real scan at once on two native engine processes, and their heartbeats keep
 * flowing while the engines are busy (a 3 s heartbeat timeout, pages that take longer).
 */
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let dir: string;
let native: NativeTesseractProvider;
let ws: number;

beforeAll(async () => {
  dir = await makeTempDir('quire-pool-');
  native = new NativeTesseractProvider({ threads: 2, dataCacheDir: path.join(dir, 'cache') });
  quire = await createTestQuire(
    { QUIRE_DEFAULT_PROVIDER: 'auto', QUIRE_ENGINE_THREADS: '2', WORKER_CONCURRENCY: '' },
    createProviderRegistry([native]),
  );
  ws = await quire.workspace();
  worker = await quire.newWorker();
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await native?.close();
  await quire?.close();
  await removeDir(dir);
});

describe('engine slots through the workflow (P2)', () => {
  it('P2 two pages at once keep two engine workers busy, heartbeating, each read once', async () => {
    expect(quire.config.WORKER_CONCURRENCY).toBe(4);
    const form = new FormData();
    const bytes = await readFile(MANIFESTO_PAGE);
    for (const name of ['a.png', 'b.png']) {
      form.append('files[]', new Blob([bytes], { type: 'image/png' }), name);
    }
    const { records, result } = await ingestWithJobs(quire, ws, form);
    const busy: number[] = [];
    const sampler = setInterval(() => busy.push(native.poolStats().busy), 50);
    const outcomes = await Promise.all(
      records.map((r) => quire.temporal.workflow.getHandle(r.workflowId).result()),
    );
    clearInterval(sampler);
    expect(outcomes.map((o) => o.status)).toEqual(['completed', 'completed']);
    expect(native.poolStats().peakBusy).toBe(2);
    expect(busy.filter((n) => n === 2).length).toBeGreaterThan(0);
    for (const record of records) {
      // One attempt each: no heartbeat timeout while both engines ran.
      const attempts = await listAttempts(quire.db.pool, record.id);
      expect(attempts.map((a) => a.outcome)).toEqual(['completed']);
    }
    const texts = [];
    for (const page of result.pages) {
      const stored = await getPage(quire.db.pool, ws, page.pageId);
      texts.push(segmentsOf(stored!.annotationPage).map((s) => s.text));
    }
    expect(texts[0]).toEqual(texts[1]);
    expect(texts[0]?.slice(0, 3)).toEqual(['MANIFESTO', 'OF THE', 'COMMUNIST PARTY']);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });
});
