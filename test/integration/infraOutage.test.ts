import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashToken, newAttemptToken } from '../../core/attemptToken';
import { buildSnapshot } from '../../core/pricing';
import { claimAttempt } from '../../db/attempts';
import { auditInvariants } from '../../db/audit';
import { createJob, getJob, listAttempts } from '../../db/jobs';
import { createPool, type Pool, withTransaction } from '../../db/pool';
import { createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import type { QuireWorker } from '../../worker/createWorker';
import { createQuireWorker } from '../../worker/createWorker';
import { GatedEngine } from '../support/countingProvider';
import { createTestQuire, silentLogger, type TestQuire } from '../support/quire';
import { startTcpProxy, type TcpProxy, throughProxy } from '../support/tcpProxy';
import { eventually } from '../support/wait';

/**
 * D7 with a real outage: the worker reaches PostgreSQL through a TCP proxy that the test cuts
 * (every connection dropped, new ones refused) and restores, while the Temporal dev server and
 * the test's own connection stay up. The engine reads whole pages (P1), and the cut comes the
 * moment a read has finished, before it is saved.
 */
const engine = new GatedEngine(new SimulatedProvider());
const SIMULATED = { lines: 4, readPages: true };
let quire: TestQuire;
let proxy: TcpProxy;
let workerPool: Pool;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire({}, createProviderRegistry([engine]));
  const target = new URL(quire.db.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  workerPool = createPool(throughProxy(quire.db.url, proxy), 4);
  ws = await quire.workspace();
});

afterEach(async () => {
  engine.afterRead = async () => {};
  proxy.thaw();
  await proxy.restore();
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});

afterAll(async () => {
  await workerPool?.end().catch(() => {});
  await proxy?.close();
  await quire?.close();
});

/** A worker whose every database connection goes through the proxy. */
async function workerBehindProxy(
  identity: string,
  infraWaitMs: number,
  pool: Pool = workerPool,
): Promise<QuireWorker> {
  return createQuireWorker({
    config: { ...quire.config, QUIRE_INFRA_WAIT_MS: infraWaitMs },
    pool,
    providers: quire.providers,
    connection: quire.connection,
    client: quire.client,
    blobStore: quire.blobStore,
    workflowBundle: process.env.QUIRE_TEST_WORKFLOW_BUNDLE
      ? { codePath: process.env.QUIRE_TEST_WORKFLOW_BUNDLE }
      : undefined,
    logger: silentLogger,
    identity,
  });
}

function readsOf(jobId: string): number {
  return engine.calls.filter((c) => c.jobId === jobId && c.op === 'read').length;
}

async function stepRows(jobId: string) {
  const { rows } = await quire.db.pool.query(
    'SELECT attempt_number, step, worker, outcome FROM attempt_steps WHERE job_id = $1 ORDER BY finished_at',
    [jobId],
  );
  return rows;
}

describe('PostgreSQL unreachable for the worker (D7)', () => {
  it('D7 PostgreSQL cut while a finished page read waits to be saved: the step waits heartbeating past its heartbeat timeout, the read is saved once, no attempt charged', async () => {
    const worker = await workerBehindProxy('worker-behind-proxy', 60_000);
    const running = worker.run();
    try {
      let cutAt = 0;
      engine.afterRead = async () => {
        engine.afterRead = async () => {};
        await proxy.cut();
        cutAt = Date.now();
      };
      const pageId = await quire.page(ws);
      const job = await quire.client.startJob({
        workspaceId: ws,
        pageId,
        options: { simulated: SIMULATED },
      });
      await eventually(async () => (cutAt > 0 ? true : undefined), 30_000, 20);
      const acceptedBefore = proxy.accepted();
      // Twice the heartbeat timeout (3 s): only heartbeats keep the attempt's lease meanwhile.
      await new Promise((resolve) =>
        setTimeout(resolve, 2 * quire.config.QUIRE_HEARTBEAT_TIMEOUT_MS),
      );
      const during = await getJob(quire.db.pool, ws, job.jobId);
      expect(during?.status).toBe('running');
      expect(await listAttempts(quire.db.pool, job.jobId)).toMatchObject([{ outcome: 'running' }]);
      await proxy.restore();
      const outcome = await quire.temporal.workflow.getHandle(job.workflowId).result();
      expect(outcome).toMatchObject({ status: 'completed', attempts: 1 });
      // The worker came back through the proxy: it really had lost its database.
      expect(proxy.accepted()).toBeGreaterThan(acceptedBefore);
      expect(readsOf(job.jobId)).toBe(1);
      const attempts = await listAttempts(quire.db.pool, job.jobId);
      expect(attempts.map((a) => [a.attemptNumber, a.outcome, a.errorCategory])).toEqual([
        [1, 'completed', null],
      ]);
      const paid = await quire.db.pool.query(
        `SELECT count(*)::int AS n FROM provider_calls WHERE job_id = $1 AND operation = 'read'`,
        [job.jobId],
      );
      expect(paid.rows[0].n).toBe(1);
      expect(attempts[0]?.stepWorkers).toEqual(['worker-behind-proxy']);
      // D9: the step names the worker that ran it.
      expect(await stepRows(job.jobId)).toEqual([
        {
          attempt_number: 1,
          step: 'segmentPage',
          worker: 'worker-behind-proxy',
          outcome: 'completed',
        },
      ]);
    } finally {
      worker.shutdown();
      await running;
    }
  });

  it('D7 PostgreSQL stops answering (frozen, not closed) while a finished read waits to be saved: each call fails within its bound, the step keeps its heartbeat, no attempt is charged, and the job completes once it thaws', async () => {
    // The bounds of core/config.ts (QUIRE_DB_*), short here; the heartbeat timeout is 3 s.
    const bounded = createPool(throughProxy(quire.db.url, proxy), 4, {
      connectMs: 1_000,
      queryMs: 1_500,
      keepAliveMs: 1_000,
    });
    const worker = await workerBehindProxy('worker-frozen-db', 60_000, bounded);
    const running = worker.run();
    try {
      let frozeAt = 0;
      engine.afterRead = async () => {
        engine.afterRead = async () => {};
        proxy.freeze();
        frozeAt = Date.now();
      };
      const pageId = await quire.page(ws);
      const job = await quire.client.startJob({
        workspaceId: ws,
        pageId,
        options: { simulated: SIMULATED },
      });
      await eventually(async () => (frozeAt > 0 ? true : undefined), 30_000, 20);
      const acceptedBefore = proxy.accepted();
      await new Promise((resolve) =>
        setTimeout(resolve, 2 * quire.config.QUIRE_HEARTBEAT_TIMEOUT_MS),
      );
      // The save gave up on its silent connection within the bound and tried new ones.
      expect(proxy.accepted()).toBeGreaterThan(acceptedBefore);
      expect((await getJob(quire.db.pool, ws, job.jobId))?.status).toBe('running');
      expect(await listAttempts(quire.db.pool, job.jobId)).toMatchObject([{ outcome: 'running' }]);
      proxy.thaw();
      const outcome = await quire.temporal.workflow.getHandle(job.workflowId).result();
      expect(outcome).toMatchObject({ status: 'completed', attempts: 1 });
      expect(readsOf(job.jobId)).toBe(1);
      const attempts = await listAttempts(quire.db.pool, job.jobId);
      expect(attempts.map((a) => [a.attemptNumber, a.outcome, a.errorCategory])).toEqual([
        [1, 'completed', null],
      ]);
    } finally {
      worker.shutdown();
      await running;
      // The connections left frozen are dropped now, so the next test meets a proxy that
      // forwards every connection.
      void bounded.end().catch(() => {});
      await proxy.cut();
      await proxy.restore();
    }
  });

  it('D7 an outage longer than QUIRE_INFRA_WAIT_MS: the step gives up uncharged, the same attempt runs again once PostgreSQL is back, and the job completes on its first attempt', async () => {
    const worker = await workerBehindProxy('worker-short-wait', 500);
    const running = worker.run();
    try {
      let cut = false;
      engine.afterRead = async () => {
        engine.afterRead = async () => {};
        await proxy.cut();
        cut = true;
      };
      const pageId = await quire.page(ws);
      const job = await quire.client.startJob({
        workspaceId: ws,
        pageId,
        options: { simulated: SIMULATED },
      });
      await eventually(async () => (cut ? true : undefined), 30_000, 20);
      // Long enough for the save to give up and for the rerun to meet the outage again.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      expect(await listAttempts(quire.db.pool, job.jobId)).toMatchObject([{ outcome: 'running' }]);
      await proxy.restore();
      const outcome = await quire.temporal.workflow.getHandle(job.workflowId).result();
      expect(outcome).toMatchObject({ status: 'completed', attempts: 1 });
      const attempts = await listAttempts(quire.db.pool, job.jobId);
      expect(attempts.map((a) => [a.attemptNumber, a.outcome])).toEqual([[1, 'completed']]);
      // The read that could not be saved in time was lost, and made again in the same attempt.
      expect(readsOf(job.jobId)).toBe(2);
      const history = await quire.temporal.workflow.getHandle(job.workflowId).fetchHistory();
      const fired = (history.events ?? []).filter((e) => e.timerStartedEventAttributes).length;
      expect(fired).toBeGreaterThanOrEqual(1);
    } finally {
      worker.shutdown();
      await running;
    }
  });

  it('D7 a claim that committed while its report was lost is refunded by the next claim of the same run; an attempt the run held is a crashed lease', async () => {
    const pageId = await quire.page(ws);
    const { job } = await withTransaction(quire.db.pool, (tx) =>
      createJob(tx, {
        workspaceId: ws,
        pageId,
        snapshot: buildSnapshot({ provider: 'simulated' }),
      }),
    );
    const claim = (knownAttempt: number | null) =>
      claimAttempt(quire.db.pool, {
        jobId: job.id,
        owner: 'w',
        tokenHash: hashToken(newAttemptToken()),
        maxAttempts: 5,
        knownAttempt,
      });
    // Attempt 1 committed; the workflow never heard of it and claims again, knowing none.
    expect(await claim(null)).toMatchObject({ state: 'claimed', attemptNumber: 1 });
    expect(await claim(null)).toMatchObject({
      state: 'claimed',
      attemptNumber: 2,
      chargedAttempts: 1,
    });
    // The run held attempt 2, which stopped heartbeating: charged as a crash (A1, Q3a).
    expect(await claim(2)).toMatchObject({ attemptNumber: 3, chargedAttempts: 2 });
    const attempts = await listAttempts(quire.db.pool, job.id);
    expect(attempts.map((a) => [a.attemptNumber, a.outcome, a.errorCategory, a.refunded])).toEqual([
      [1, 'retryable_failed', 'crashed', true],
      [2, 'lease_expired', 'crashed', false],
      [3, 'running', null, false],
    ]);
  });
});
