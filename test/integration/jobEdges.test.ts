import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashToken, newAttemptToken } from '../../core/attemptToken';
import { QUERIES, SIGNALS } from '../../core/temporal';
import { claimAttempt } from '../../db/attempts';
import { auditInvariants } from '../../db/audit';
import { setWorkspaceBudget } from '../../db/budget';
import { saveSegmentCheckpoint, sweepEndedJobCheckpoints } from '../../db/checkpoints';
import { createJobStore } from '../../db/jobStore';
import { cancelJob, getJob, getJobById, listAttempts } from '../../db/jobs';
import { authenticateApiKey, createWorkspace } from '../../db/workspaces';
import { buildSnapshot, createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import { configureWeb } from '../../web/lib/server';
import { rerunJob } from '../../web/services/jobs';
import type { QuireWorker } from '../../worker/createWorker';
import { CountingProvider } from '../support/countingProvider';
import { fenced } from '../support/fenced';
import {
  createTestQuire,
  eventually,
  type TestQuire,
  temporalAddress,
  untilStatus,
} from '../support/quire';
import { untilWaitingAgainAfter } from '../support/wait';

/**
 * What a careful review found around a job's edges: a dead token met while a failure is
 * recorded, a budget-paused workspace that must wait quietly, re-runs that keep the request,
 * and text that no job will commit, which must not be kept for ever.
 */
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let ws: number;

const counting = new CountingProvider(new SimulatedProvider());

beforeAll(async () => {
  quire = await createTestQuire({}, createProviderRegistry([counting]));
  ws = await quire.workspace();
  worker = await quire.newWorker();
  running = worker.run();
  configureWeb({ ...quire.config, TEMPORAL_ADDRESS: temporalAddress() });
});
afterEach(async () => {
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});
afterAll(async () => {
  worker?.shutdown();
  await running;
  await quire?.close();
});

async function untilAttemptRunning(jobId: string) {
  return eventually(async () => {
    const attempts = await listAttempts(quire.db.pool, jobId);
    return attempts.some((a) => a.outcome === 'running') ? attempts : undefined;
  });
}

async function count(sql: string, params: unknown[]): Promise<number> {
  const { rows } = await quire.db.pool.query(sql, params);
  return rows[0].n;
}

describe('job edges (A1, J5, B1, O3)', () => {
  it.each([
    ['closing a charged failure', 'timeout'],
    ['pausing the provider', 'outage'],
  ])(
    'A1 J5 a StaleAttempt met while %s (job canceled in the database meanwhile) ends the run canceled, with its cleanup',
    async (_, category) => {
      const pageId = await quire.page(ws);
      const job = await quire.client.startJob({
        workspaceId: ws,
        pageId,
        options: {
          simulated: { lines: 2, latencyMs: 1_500, faults: [{ op: 'segment', category }] },
        },
      });
      await untilAttemptRunning(job.jobId);
      // The engine is reading the page when the job is canceled.
      await eventually(async () =>
        counting.calls.some((c) => c.jobId === job.jobId && c.op === 'segment') ? true : undefined,
      );
      // The database only: the workflow hears nothing until its next fenced write.
      await cancelJob(quire.db.pool, ws, job.jobId);
      const outcome = await quire.temporal.workflow.getHandle(job.workflowId).result();
      expect(outcome.status).toBe('canceled');
      const attempts = await listAttempts(quire.db.pool, job.jobId);
      expect(attempts.map((a) => a.outcome)).toEqual(['canceled']);
      expect((await getJobById(quire.db.pool, job.jobId))?.status).toBe('canceled');
    },
  );

  it('B1 a budget-paused workspace waits without writing an attempt, a ledger row or an event per re-check', async () => {
    const budgeted = await quire.workspace('Budget spent');
    // Segmenting a page costs 500: over this budget at once.
    await setWorkspaceBudget(quire.db.pool, budgeted, 250);
    const pageId = await quire.page(budgeted);
    const job = await quire.client.startJob({
      workspaceId: budgeted,
      pageId,
      options: { simulated: { lines: 2 } },
    });
    await eventually(async () => {
      const row = await getJob(quire.db.pool, budgeted, job.jobId);
      return row?.stage === 'paused' ? row : undefined;
    });
    const before = {
      attempts: await count(
        'SELECT count(*)::int AS n FROM transcription_job_attempts WHERE job_id = $1',
        [job.jobId],
      ),
      ledger: await count('SELECT count(*)::int AS n FROM provider_calls WHERE workspace_id = $1', [
        budgeted,
      ]),
      events: await count('SELECT count(*)::int AS n FROM event_outbox WHERE workspace_id = $1', [
        budgeted,
      ]),
    };
    expect(before.attempts).toBe(1);
    // Each wake-up is what the ten-minute re-check does: claim again.
    const handle = quire.temporal.workflow.getHandle(job.workflowId);
    for (let i = 0; i < 3; i++) {
      await handle.signal(SIGNALS.providerResumed, { provider: 'simulated' });
      // Claimed again and back to waiting: whatever the re-check writes is written by now.
      await untilWaitingAgainAfter(handle, SIGNALS.providerResumed);
      await eventually(async () => {
        const progress = (await handle.query(QUERIES.progress)) as { stage: string };
        return progress.stage === 'paused' ? true : undefined;
      });
    }
    expect({
      attempts: await count(
        'SELECT count(*)::int AS n FROM transcription_job_attempts WHERE job_id = $1',
        [job.jobId],
      ),
      ledger: await count('SELECT count(*)::int AS n FROM provider_calls WHERE workspace_id = $1', [
        budgeted,
      ]),
      events: await count('SELECT count(*)::int AS n FROM event_outbox WHERE workspace_id = $1', [
        budgeted,
      ]),
    }).toEqual(before);
    expect((await getJob(quire.db.pool, budgeted, job.jobId))?.status).toBe('pending');
    // A budget raised by an operator lets it run at the next claim.
    await setWorkspaceBudget(quire.db.pool, budgeted, 10_000);
    await handle.signal(SIGNALS.providerResumed, { provider: 'simulated' });
    await untilStatus(quire, budgeted, job.jobId, 'completed');
  });

  it('Re-run keeps the job language, model, options, reference and metadata', async () => {
    const { workspace, apiKey } = await createWorkspace(quire.db.pool, 'Re-run');
    const principal = await authenticateApiKey(quire.db.pool, apiKey);
    if (!principal) throw new Error('no principal');
    const pageId = await quire.page(workspace.id);
    const first = await quire.client.startJob({
      workspaceId: workspace.id,
      pageId,
      language: 'de',
      model: 'sim-2',
      options: { simulated: { lines: 3, seed: 'rerun' } },
      externalReferenceId: 'register-7',
      metadata: { shelf: 'B7' },
    });
    await untilStatus(quire, workspace.id, first.jobId, 'completed');
    const { jobId } = await rerunJob(principal, first.jobId);
    const original = await getJob(quire.db.pool, workspace.id, first.jobId);
    const rerun = await getJob(quire.db.pool, workspace.id, jobId);
    expect(rerun?.snapshot).toMatchObject({
      provider: 'simulated',
      language: 'de',
      model: 'sim-2',
      options: { simulated: { lines: 3, seed: 'rerun' } },
    });
    expect(rerun?.snapshot).toEqual(original?.snapshot);
    expect(rerun).toMatchObject({ externalReferenceId: 'register-7', metadata: { shelf: 'B7' } });
    await untilStatus(quire, workspace.id, jobId, 'completed');
  });

  it('D11 a job that ends (failed, canceled, superseded, completed) takes its checkpoints with it; the audit evidence stays', async () => {
    const store = createJobStore(quire.db.pool);
    const recognized = async (ended: 'canceled' | 'failed' | 'superseded') => {
      const pageId = await quire.page(ws);
      const snapshot = buildSnapshot({ provider: 'simulated', options: {} });
      const { job } = await store.createJob({ workspaceId: ws, pageId, snapshot });
      const tokenHash = hashToken(newAttemptToken());
      const claim = await claimAttempt(quire.db.pool, {
        jobId: job.id,
        owner: 't',
        tokenHash,
        maxAttempts: 5,
      });
      if (claim.state !== 'claimed') throw new Error('not claimed');
      const fence = { jobId: job.id, attemptNumber: claim.attemptNumber, tokenHash };
      const call = {
        workspaceId: ws,
        by: { provider: 'simulated', price: {} },
        cost: { units: 1, unit: 'line' as const },
      };
      const line = { text: 'a private line', confidence: 1 };
      await saveSegmentCheckpoint(quire.db.pool, fence, 0, line, call);
      // Saved while the job runs: the next attempt would resume from it.
      expect(await left(job.id)).toBe(1);
      if (ended === 'canceled') await cancelJob(quire.db.pool, ws, job.id);
      else if (ended === 'superseded') {
        const { job: next } = await store.createJob({ workspaceId: ws, pageId, snapshot });
        await cancelJob(quire.db.pool, ws, next.id);
      } else {
        const { closeAttempt } = await import('../../db/attempts');
        await fenced(quire.db.pool, fence, (client) =>
          closeAttempt(client, fence, { outcome: 'failed', category: 'content', detail: 'x' }, 5),
        );
      }
      expect((await getJobById(quire.db.pool, job.id))?.status).toBe(ended);
      return job.id;
    };
    const left = async (jobId: string) =>
      count('SELECT count(*)::int AS n FROM job_checkpoints WHERE job_id = $1', [jobId]);
    for (const ended of ['canceled', 'failed', 'superseded'] as const) {
      const jobId = await recognized(ended);
      expect(await left(jobId)).toBe(0);
      expect((await listAttempts(quire.db.pool, jobId)).length).toBe(1);
    }
    const pageId = await quire.page(ws);
    const done = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 2 } },
    });
    await untilStatus(quire, ws, done.jobId, 'completed');
    expect(await left(done.jobId)).toBe(0);
    expect((await getJob(quire.db.pool, ws, done.jobId))?.completedSegments).toBe(2);
  });

  it("D11 the maintenance sweep removes, in batches, the checkpoints ended jobs kept before they went with the end, and never a running job's", async () => {
    const ended: string[] = [];
    for (const _ of [1, 2, 3]) {
      const pageId = await quire.page(ws);
      const job = await quire.client.startJob({
        workspaceId: ws,
        pageId,
        options: { simulated: { lines: 1 } },
      });
      await untilStatus(quire, ws, job.jobId, 'completed');
      ended.push(job.jobId);
    }
    // Rows as an earlier release left them, beside a running job's row, which must stay.
    const store = createJobStore(quire.db.pool);
    const runningPage = await quire.page(ws);
    const { job: active } = await store.createJob({
      workspaceId: ws,
      pageId: runningPage,
      snapshot: buildSnapshot({ provider: 'simulated', options: {} }),
    });
    await quire.db.pool.query(
      `INSERT INTO job_checkpoints (job_id, stage, seq, attempt_number, payload)
       SELECT id, 'recognize', 0, 1, '{"text":"kept"}' FROM unnest($1::text[]) AS id`,
      [[...ended, active.id]],
    );
    const removed = await sweepEndedJobCheckpoints(quire.db.pool, 2);
    expect(removed).toBe(3);
    for (const jobId of ended)
      expect(
        await count('SELECT count(*)::int AS n FROM job_checkpoints WHERE job_id = $1', [jobId]),
      ).toBe(0);
    expect(
      await count('SELECT count(*)::int AS n FROM job_checkpoints WHERE job_id = $1', [active.id]),
    ).toBe(1);
    await cancelJob(quire.db.pool, ws, active.id);
  });
});
