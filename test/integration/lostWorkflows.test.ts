import { execFileSync } from 'node:child_process';
import type { Worker } from '@temporalio/worker';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { auditInvariants } from '../../db/audit';
import { createJobStore } from '../../db/jobStore';
import { getJob, listAttempts } from '../../db/jobs';
import { buildSnapshot, createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import type { QuireWorker } from '../../worker/createWorker';
import { CountingProvider } from '../support/countingProvider';
import {
  createTestQuire,
  eventually,
  type TestQuire,
  temporalAddress,
  untilSegments,
  untilStatus,
} from '../support/quire';

/**
 * D4: a job whose workflow no longer runs in Temporal is found by the reconciler and either
 * continued from its checkpoints in a new run or failed with a stated category; never left
 * active. Workflows are terminated with the Temporal CLI, as an operator would.
 */
const counting = new CountingProvider(new SimulatedProvider());
let quire: TestQuire;
let worker: QuireWorker;
let maintenance: Worker;
let running: Promise<unknown>;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire({}, createProviderRegistry([counting]));
  ws = await quire.workspace();
  worker = await quire.newWorker();
  maintenance = await quire.newMaintenanceWorker();
  running = Promise.all([worker.run(), maintenance.run()]);
});
afterEach(async () => {
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});
afterAll(async () => {
  worker?.shutdown();
  maintenance?.shutdown();
  await running;
  await quire?.close();
});

function terminate(workflowId: string) {
  execFileSync(process.env.QUIRE_TEMPORAL_BIN_RESOLVED ?? 'temporal', [
    'workflow',
    'terminate',
    '--workflow-id',
    workflowId,
    '--reason',
    'operator terminated it from the command line',
    '--address',
    temporalAddress(),
  ]);
}

/** One run of the scheduled reconciler's workflow, as its schedule starts it. */
async function reconcile(tag: string) {
  return quire.temporal.workflow.execute('reconcileJobs', {
    taskQueue: quire.config.QUIRE_MAINTENANCE_TASK_QUEUE,
    workflowId: `reconcile-${tag}-${Date.now()}`,
    args: [{ olderThanMs: 0 }],
  }) as Promise<{ started: number; lost: Record<string, number> }>;
}

async function untilTerminated(workflowId: string) {
  await eventually(async () => {
    const described = await quire.temporal.workflow.getHandle(workflowId).describe();
    return described.status.name === 'TERMINATED' ? true : undefined;
  });
}

describe('nothing left behind (D4)', () => {
  it('D4 a running job whose workflow is terminated with the Temporal CLI is continued from its checkpoints and finishes', async () => {
    const pageId = await quire.page(ws);
    const job = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 24, latencyMs: 120 } },
    });
    await untilSegments(quire, ws, job.jobId, 6);
    terminate(job.workflowId);
    await untilTerminated(job.workflowId);
    // Today nothing else would ever move it: the database still says the job is active.
    expect((await getJob(quire.db.pool, ws, job.jobId))?.status).toMatch(/^(running|pending)$/);

    const run = await reconcile('terminated');
    expect(run.lost).toMatchObject({ continued: 1, failed: 0 });
    const done = await untilStatus(quire, ws, job.jobId, 'completed');
    expect([done.completedSegments, done.totalSegments, done.resultRevision]).toEqual([24, 24, 1]);
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    // D7: the lost run's attempt was cut off by its workflow's end, not by the page or the
    // engine: the new run closes it refunded, so it charges nothing.
    expect(attempts.map((a) => [a.outcome, a.errorCategory, a.refunded])).toEqual([
      ['retryable_failed', 'crashed', true],
      ['completed', null, false],
    ]);
    // The new run resumed after the checkpointed lines: most lines were read once.
    const reread = Array.from({ length: 24 }, (_, i) => counting.recognizedCount(job.jobId, i));
    expect(reread.filter((n) => n > 1).length).toBeLessThanOrEqual(2);
    expect(counting.calls.filter((c) => c.jobId === job.jobId && c.op === 'segment')).toHaveLength(
      1,
    );
  });

  it('D4 a job whose workflow history is lost (not found in Temporal) is started again and finishes', async () => {
    const pageId = await quire.page(ws);
    const store = createJobStore(quire.db.pool);
    const { job } = await store.createJob({
      workspaceId: ws,
      pageId,
      snapshot: buildSnapshot({ provider: 'simulated', options: { simulated: { lines: 2 } } }),
    });
    // Recorded as started, but Temporal has no such workflow (its history is gone).
    await store.markWorkflowStarted(job.id);
    const run = await reconcile('lost');
    expect(run.lost.continued).toBeGreaterThanOrEqual(1);
    await untilStatus(quire, ws, job.id, 'completed');
  });

  it('D4 a job whose workflow keeps ending is failed with a stated category, its attempt closed', async () => {
    const pageId = await quire.page(ws);
    const job = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 30, latencyMs: 200 } },
    });
    await untilSegments(quire, ws, job.jobId, 1);
    // It was already continued as often as the reconciler allows.
    await quire.db.pool.query('UPDATE transcription_jobs SET workflow_restarts = 3 WHERE id = $1', [
      job.jobId,
    ]);
    terminate(job.workflowId);
    await untilTerminated(job.workflowId);
    const run = await reconcile('exhausted');
    expect(run.lost).toMatchObject({ failed: 1, continued: 0 });
    const failed = await getJob(quire.db.pool, ws, job.jobId);
    expect(failed).toMatchObject({ status: 'failed', errorCategory: 'internal' });
    expect(failed?.errorDetail).toMatch(/workflow ended terminated after 3 new runs/);
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts.map((a) => a.outcome)).toEqual(['lease_expired']);
  });

  it('D4 a job whose workflow still runs is left alone by the reconciler', async () => {
    const pageId = await quire.page(ws);
    const job = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 40, latencyMs: 200 } },
    });
    await untilSegments(quire, ws, job.jobId, 1);
    const run = await reconcile('running');
    expect(run.lost).toMatchObject({ continued: 0, failed: 0, canceled: 0 });
    expect((await getJob(quire.db.pool, ws, job.jobId))?.status).toBe('running');
    // Ended here so that it does not outlive the test.
    await quire.client.cancelJob(ws, job.jobId);
    await untilStatus(quire, ws, job.jobId, 'canceled');
  });
});
