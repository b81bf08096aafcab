import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { segmentsOf } from '../../core/annotation';
import { auditInvariants } from '../../db/audit';
import { createBatch } from '../../db/ingest';
import { getJob, listAttempts } from '../../db/jobs';
import { getPage, savePageEdit } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { createProviderRegistry } from '../../providers/registry';
import { type SimulatedOptions, SimulatedProvider } from '../../providers/simulated';
import type { QuireWorker } from '../../worker/createWorker';
import { CHECKPOINT_LOG, logCheckpointWrites } from '../support/checkpointLog';
import { CountingProvider } from '../support/countingProvider';
import { createTestQuire, eventually, type TestQuire, untilSegments } from '../support/quire';

const counting = new CountingProvider(new SimulatedProvider());
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let ws: number;

beforeAll(async () => {
  // Short recognize slices, so the workflow's progress query moves while a page is read.
  quire = await createTestQuire(
    { QUIRE_RECOGNIZE_SLICE_MS: '300' },
    createProviderRegistry([counting]),
  );
  ws = await quire.workspace();
  await logCheckpointWrites(quire.db.pool);
  worker = await quire.newWorker();
  running = worker.run();
});

afterEach(async () => {
  // Every test ends with the invariant auditor.
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await quire?.close();
});

async function start(
  pageId: number,
  simulated: SimulatedOptions,
  extra: Record<string, unknown> = {},
) {
  return quire.client.startJob({ workspaceId: ws, pageId, options: { simulated }, ...extra });
}

async function result(workflowId: string) {
  return quire.temporal.workflow.getHandle(workflowId).result();
}

async function pageTexts(pageId: number) {
  const page = await getPage(quire.db.pool, ws, pageId);
  return segmentsOf(page!.annotationPage).map((s) => s.text);
}

describe('transcription workflow (SPEC §4)', () => {
  it('T2 image stages run in order and every line is committed once, polished', async () => {
    const pageId = await quire.page(ws);
    const job = await start(pageId, { lines: 5 });
    expect((await result(job.workflowId)).status).toBe('completed');
    const texts = await pageTexts(pageId);
    expect(texts).toHaveLength(5);
    expect(texts[0]).toMatch(/^Line 1 .*\.$/);
    // Saved on the way (the log), and gone with the commit (D11).
    const checkpoints = await quire.db.pool.query(
      `SELECT stage, count(*)::int AS n FROM ${CHECKPOINT_LOG} WHERE job_id = $1 GROUP BY stage ORDER BY stage`,
      [job.jobId],
    );
    expect(checkpoints.rows).toEqual([
      { stage: 'polish', n: 1 },
      { stage: 'recognize', n: 5 },
      { stage: 'segment', n: 1 },
    ]);
    for (let i = 0; i < 5; i++) expect(counting.recognizedCount(job.jobId, i)).toBe(1);
  });

  it('T2 audio stages: submit, recognize, polish, commit with time-coded segments; engine copy deleted', async () => {
    const pageId = await quire.page(ws, 'audio');
    const job = await start(pageId, { audioSegments: 3, audioLatencyMs: 300 });
    expect((await result(job.workflowId)).status).toBe('completed');
    const page = await getPage(quire.db.pool, ws, pageId);
    const segments = segmentsOf(page!.annotationPage);
    expect(segments).toHaveLength(3);
    expect(segments[1]?.target).toEqual({ kind: 't', start: 2.5, end: 4.7 });
    const engine = await quire.db.pool.query(
      'SELECT deleted_at FROM engine_jobs WHERE job_id = $1',
      [job.jobId],
    );
    expect(engine.rows).toHaveLength(1);
    expect(engine.rows[0].deleted_at).not.toBeNull();
    expect(counting.calls.some((c) => c.op === 'delete' && c.jobId === job.jobId)).toBe(true);
  });

  it('T2 Q3 a pause mid-page keeps the checkpointed lines; the next attempt resumes after them', async () => {
    const pageId = await quire.page(ws);
    const job = await start(pageId, {
      lines: 8,
      faults: [
        { op: 'recognize', category: 'outage', segments: [5], attempts: [1], retryAfterMs: 100 },
      ],
    });
    const outcome = await result(job.workflowId);
    expect(outcome.status).toBe('completed');
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts.map((a) => [a.outcome, a.refunded, a.errorCategory])).toEqual([
      ['retryable_failed', true, 'outage'],
      ['completed', false, null],
    ]);
    for (let i = 0; i < 5; i++) expect(counting.recognizedCount(job.jobId, i)).toBe(1);
    expect(counting.recognizedCount(job.jobId, 5)).toBe(2);
    const resumed = counting.calls.filter(
      (c) => c.jobId === job.jobId && c.op === 'recognize' && c.attempt === 2,
    );
    expect(resumed.map((c) => c.segment)).toEqual([5, 6, 7]);
    const job2 = await getJob(quire.db.pool, ws, job.jobId);
    expect([job2?.completedSegments, job2?.failedSegments, job2?.totalSegments]).toEqual([8, 0, 8]);
  });

  it('E1 a job emits fenced task previews with its attempt number, then its completion', async () => {
    const pageId = await quire.page(ws);
    const job = await start(pageId, {
      lines: 4,
      faults: [{ op: 'recognize', category: 'content', segments: [2] }],
    });
    await result(job.workflowId);
    const { rows } = await quire.db.pool.query(
      `SELECT type, data FROM event_outbox WHERE data->>'jobId' = $1 ORDER BY id`,
      [job.jobId],
    );
    expect(rows.map((r) => r.type)).toEqual([
      'dev.quire.transcription.task.started',
      'dev.quire.transcription.task.completed',
      'dev.quire.transcription.completed',
    ]);
    expect(rows[0].data).toMatchObject({
      attemptNumber: 1,
      segments: [0, 1, 2, 3],
      totalSegments: 4,
      pageId,
    });
    expect(rows[1].data).toMatchObject({
      attemptNumber: 1,
      completedSegments: 3,
      failedSegments: 1,
      failed: [{ index: 2, errorCategory: 'content' }],
    });
    expect(rows[1].data.segments.map((s: { index: number }) => s.index)).toEqual([0, 1, 3]);
    expect(rows[2].data).toMatchObject({
      completedSegments: 3,
      failedSegments: 1,
      totalSegments: 4,
    });
  });

  it('J2 partial commit keeps failed lines unchanged and counts them', async () => {
    const pageId = await quire.page(ws);
    const first = await start(pageId, { lines: 6, seed: 'first' });
    await result(first.workflowId);
    const before = await pageTexts(pageId);
    const second = await start(pageId, {
      lines: 6,
      seed: 'second',
      faults: [{ op: 'recognize', category: 'content', segments: [1, 4] }],
    });
    expect((await result(second.workflowId)).status).toBe('completed');
    const after = await pageTexts(pageId);
    expect(after[1]).toBe(before[1]);
    expect(after[4]).toBe(before[4]);
    expect(after[0]).not.toBe(before[0]);
    const job = await getJob(quire.db.pool, ws, second.jobId);
    expect([job?.completedSegments, job?.failedSegments, job?.totalSegments]).toEqual([4, 2, 6]);
    expect(job?.resultRevision).toBe(2);
  });

  it('J3 five attempts then failed, with a categorical reason', async () => {
    const pageId = await quire.page(ws);
    const job = await start(pageId, {
      lines: 2,
      faults: [{ op: 'recognize', category: 'timeout' }],
    });
    const outcome = await result(job.workflowId);
    expect(outcome).toMatchObject({ status: 'failed', errorCategory: 'timeout' });
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts).toHaveLength(5);
    expect(
      attempts.every((a) => a.outcome === 'retryable_failed' && a.errorCategory === 'timeout'),
    ).toBe(true);
    const row = await getJob(quire.db.pool, ws, job.jobId);
    expect([row?.status, row?.errorCategory]).toEqual(['failed', 'timeout']);
    expect(row?.errorDetail).toMatch(/attempts exhausted/);
    expect((await getPage(quire.db.pool, ws, pageId))?.revision).toBe(0);
  });

  it('J3 polish is skipped on attempt 4 and the raw text is committed', async () => {
    const pageId = await quire.page(ws);
    const job = await start(pageId, {
      lines: 3,
      faults: [{ op: 'recognize', category: 'internal', attempts: [1, 2, 3] }],
    });
    expect((await result(job.workflowId)).status).toBe('completed');
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts.map((a) => a.outcome)).toEqual([
      'retryable_failed',
      'retryable_failed',
      'retryable_failed',
      'completed',
    ]);
    const texts = await pageTexts(pageId);
    expect(texts[0]).toMatch(/^line 1 [a-z ]+$/);
    expect(counting.calls.some((c) => c.jobId === job.jobId && c.op === 'polish')).toBe(false);
  });

  it('Q3a image and content failures of every line fail the job at once', async () => {
    const pageId = await quire.page(ws);
    const job = await start(pageId, { lines: 3, faults: [{ op: 'recognize', category: 'image' }] });
    expect(await result(job.workflowId)).toMatchObject({
      status: 'failed',
      errorCategory: 'image',
    });
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts.map((a) => [a.outcome, a.errorCategory])).toEqual([['failed', 'image']]);
  });

  it('J1 a page edited since the input revision fails the job with conflict and writes nothing', async () => {
    const pageId = await quire.page(ws);
    const job = await start(pageId, { lines: 4, latencyMs: 150 });
    await eventually(async () =>
      (await getJob(quire.db.pool, ws, job.jobId))?.status === 'running' ? true : undefined,
    );
    const edit = await withTransaction(quire.db.pool, (tx) =>
      savePageEdit(tx, {
        workspaceId: ws,
        pageId,
        expectedRevision: 0,
        segments: [
          {
            index: 0,
            target: { kind: 'xywh', box: { x: 1, y: 1, w: 10, h: 10 } },
            text: 'an editor was here',
          },
        ],
        author: { kind: 'apiKey', id: 1 },
        channel: 'api',
      }),
    );
    expect(edit.state).toBe('committed');
    expect(await result(job.workflowId)).toMatchObject({
      status: 'failed',
      errorCategory: 'conflict',
    });
    expect(await pageTexts(pageId)).toEqual(['an editor was here']);
    const revisions = await quire.db.pool.query(
      'SELECT revision, source FROM page_revisions WHERE page_id = $1 ORDER BY revision',
      [pageId],
    );
    expect(revisions.rows).toEqual([
      { revision: 0, source: 'initial' },
      { revision: 1, source: 'human' },
    ]);
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts.at(-1)).toMatchObject({ outcome: 'failed', errorCategory: 'conflict' });
  });

  it('J4 a new job for the page supersedes the running one, which stops without committing', async () => {
    const pageId = await quire.page(ws);
    const old = await start(pageId, { lines: 20, latencyMs: 100 });
    await untilSegments(quire, ws, old.jobId, 2);
    const fresh = await start(pageId, { lines: 3, seed: 'fresh' });
    expect((await result(fresh.workflowId)).status).toBe('completed');
    await expect(result(old.workflowId)).rejects.toThrow();
    const oldRow = await getJob(quire.db.pool, ws, old.jobId);
    expect([oldRow?.status, oldRow?.supersededBy]).toEqual(['superseded', fresh.jobId]);
    const attempts = await listAttempts(quire.db.pool, old.jobId);
    expect(attempts.map((a) => a.outcome)).toEqual(['superseded']);
    expect((await getPage(quire.db.pool, ws, pageId))?.revision).toBe(1);
    const describe = await quire.temporal.workflow.getHandle(old.workflowId).describe();
    expect(describe.status.name).toBe('CANCELLED');
  });

  it('J5 cancel a job: the database first, then the workflow; nothing is committed', async () => {
    const pageId = await quire.page(ws);
    const job = await start(pageId, { lines: 20, latencyMs: 100 });
    await untilSegments(quire, ws, job.jobId, 1);
    await quire.client.cancelJob(ws, job.jobId);
    // The moment cancel returns, no token of the job can write.
    const row = await getJob(quire.db.pool, ws, job.jobId);
    expect(row?.status).toBe('canceled');
    expect((await listAttempts(quire.db.pool, job.jobId)).map((a) => a.outcome)).toEqual([
      'canceled',
    ]);
    await expect(result(job.workflowId)).rejects.toThrow();
    const after = await getJob(quire.db.pool, ws, job.jobId);
    expect(after?.completedSegments).toBe(row?.completedSegments);
    expect((await getPage(quire.db.pool, ws, pageId))?.revision).toBe(0);
    const events = await quire.db.pool.query(
      `SELECT type FROM event_outbox WHERE data->>'jobId' = $1`,
      [job.jobId],
    );
    // Task previews may precede it; the only outcome event is the cancellation.
    const outcomes = events.rows.map((r) => r.type).filter((t) => !t.includes('.task.'));
    expect(outcomes).toEqual(['dev.quire.transcription.canceled']);
  });

  it('J5 cancel a batch: every active job of it, in one call', async () => {
    const batchId = await createBatch(quire.db.pool, ws);
    const jobs = [];
    for (let i = 0; i < 3; i++) {
      const pageId = await quire.page(ws);
      jobs.push(
        await quire.client.startJob({
          workspaceId: ws,
          pageId,
          batchId,
          options: { simulated: { lines: 30, latencyMs: 100 } },
        }),
      );
    }
    const canceled = await quire.client.cancelBatch(ws, batchId);
    expect(canceled.canceled).toBe(3);
    for (const job of jobs) {
      expect((await getJob(quire.db.pool, ws, job.jobId))?.status).toBe('canceled');
      const describe = await eventually(async () => {
        const d = await quire.temporal.workflow.getHandle(job.workflowId).describe();
        return d.status.name === 'RUNNING' ? undefined : d;
      });
      // A workflow cancelled mid-attempt ends CANCELLED; one that had not claimed yet finds
      // the job canceled in the database and completes with that status.
      if (describe.status.name === 'COMPLETED') {
        expect((await result(job.workflowId)).status).toBe('canceled');
      } else {
        expect(describe.status.name).toBe('CANCELLED');
      }
    }
    const batch = await quire.db.pool.query('SELECT status FROM batches WHERE id = $1', [batchId]);
    expect(batch.rows[0].status).toBe('canceled');
  });

  it('J6 the same idempotency key returns the same job', async () => {
    const pageId = await quire.page(ws);
    const a = await start(pageId, { lines: 2 }, { idempotencyKey: 'upload-42' });
    const b = await start(pageId, { lines: 2 }, { idempotencyKey: 'upload-42' });
    expect(b.jobId).toBe(a.jobId);
    expect([a.created, b.created]).toEqual([true, false]);
    const count = await quire.db.pool.query(
      'SELECT count(*)::int AS n FROM transcription_jobs WHERE page_id = $1',
      [pageId],
    );
    expect(count.rows[0].n).toBe(1);
    expect((await result(a.workflowId)).status).toBe('completed');
  });

  it('J6 the reconciler starts a job whose row exists but whose workflow never started', async () => {
    const pageId = await quire.page(ws);
    const { createJobStore } = await import('../../db/jobStore');
    const { buildSnapshot } = await import('../../providers/registry');
    const store = createJobStore(quire.db.pool);
    const { job } = await store.createJob({
      workspaceId: ws,
      pageId,
      snapshot: buildSnapshot({ provider: 'simulated', options: { simulated: { lines: 2 } } }),
    });
    // The reconciler runs on the maintenance queue, served by its own worker.
    const maintenance = await quire.newMaintenanceWorker();
    const run = await maintenance.runUntil(
      quire.temporal.workflow.execute('reconcileJobs', {
        taskQueue: quire.config.QUIRE_MAINTENANCE_TASK_QUEUE,
        workflowId: `reconcile-${job.id}`,
        args: [{ olderThanMs: 0 }],
      }),
    );
    expect(run.started).toBeGreaterThanOrEqual(1);
    expect((await result(job.workflowId)).status).toBe('completed');
    const row = await getJob(quire.db.pool, ws, job.id);
    expect(row?.workflowStartedAt).not.toBeNull();
  });

  it('§8 progress query reports stage, segments and attempt while the job runs', async () => {
    const pageId = await quire.page(ws);
    const job = await start(pageId, { lines: 25, latencyMs: 40 });
    const progress = await eventually(async () => {
      const p = await quire.client.getProgress(job.jobId);
      return p.stage === 'recognize' && p.completedSegments >= 10 ? p : undefined;
    });
    expect(progress).toMatchObject({
      jobId: job.jobId,
      status: 'running',
      attemptNumber: 1,
      totalSegments: 25,
    });
    await result(job.workflowId);
    const done = await quire.client.getProgress(job.jobId);
    expect(done).toMatchObject({ status: 'completed', stage: 'done', completedSegments: 25 });
  });

  it('§8 invalid start input is rejected with a clear error and writes nothing', async () => {
    const before = await quire.db.pool.query('SELECT count(*)::int AS n FROM transcription_jobs');
    await expect(quire.client.startJob({ workspaceId: ws, pageId: -1 })).rejects.toThrow(/pageId/);
    await expect(
      quire.client.startJob({ workspaceId: ws, pageId: 1, provider: 'nope' }),
    ).rejects.toThrow(/unknown provider/);
    await expect(quire.client.startJob({ workspaceId: ws, pageId: 999_999 })).rejects.toThrow(
      /page 999999 not found/,
    );
    const after = await quire.db.pool.query('SELECT count(*)::int AS n FROM transcription_jobs');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });
});

describe('polish (T2)', () => {
  it('T2 a job may polish through another provider named in its options', async () => {
    const polisher = new CountingProvider(new SimulatedProvider({}, 'polisher'));
    const local = await createTestQuire({}, createProviderRegistry([counting, polisher]));
    const localWs = await local.workspace();
    const localWorker = await local.newWorker();
    try {
      await localWorker.runUntil(async () => {
        const pageId = await local.page(localWs);
        const job = await local.client.startJob({
          workspaceId: localWs,
          pageId,
          options: { simulated: { lines: 2 }, polishProvider: 'polisher' },
        });
        expect((await local.temporal.workflow.getHandle(job.workflowId).result()).status).toBe(
          'completed',
        );
        expect(polisher.calls.map((c) => c.op)).toEqual(['polish']);
        expect(counting.calls.some((c) => c.jobId === job.jobId && c.op === 'polish')).toBe(false);
      });
    } finally {
      await local.close();
    }
  });
});

describe('the activity boundary (Q3, J3)', () => {
  it('Q3 J3 a job for a provider the worker did not register fails its attempts internal, not crashed', async () => {
    // The client knows `simulated`; the worker registers no engine at all, so the job is
    // created as any valid job is and only the worker finds the provider missing.
    const local = await createTestQuire({ QUIRE_MAX_ATTEMPTS: '2' });
    const localWs = await local.workspace();
    const localWorker = await local.newWorker(undefined, {
      providers: createProviderRegistry([]),
    });
    try {
      await localWorker.runUntil(async () => {
        const pageId = await local.page(localWs);
        const job = await local.client.startJob({ workspaceId: localWs, pageId });
        const outcome = await local.temporal.workflow.getHandle(job.workflowId).result();
        expect([outcome.status, outcome.errorCategory]).toEqual(['failed', 'internal']);
        const attempts = await listAttempts(local.db.pool, job.jobId);
        expect(attempts.map((a) => [a.outcome, a.refunded, a.errorCategory])).toEqual([
          ['retryable_failed', false, 'internal'],
          ['retryable_failed', false, 'internal'],
        ]);
        expect((await getJob(local.db.pool, localWs, job.jobId))?.errorCategory).toBe('internal');
      });
      expect(await auditInvariants(local.db.pool)).toEqual([]);
    } finally {
      await local.close();
    }
  });
});
