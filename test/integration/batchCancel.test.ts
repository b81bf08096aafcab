import { Client, Connection } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QuireClient } from '../../client';
import { hashToken, newAttemptToken } from '../../core/attemptToken';
import { claimAttempt } from '../../db/attempts';
import { auditInvariants } from '../../db/audit';
import { saveSegmentCheckpoint } from '../../db/checkpoints';
import { createBatch } from '../../db/ingest';
import { createJobStore } from '../../db/jobStore';
import { cancelBatch, cancelJob, createJob, getJob, listAttempts } from '../../db/jobs';
import { withTransaction } from '../../db/pool';
import { createWorkspace } from '../../db/workspaces';
import { buildSnapshot } from '../../providers/registry';
import { configureWeb } from '../../web/lib/server';
import type { QuireWorker } from '../../worker/createWorker';
import { call, type RouteModule } from '../support/api';
import { ingestWithJobs } from '../support/ingest';
import { createTestQuire, eventually, type TestQuire, temporalAddress } from '../support/quire';
import { png } from '../support/uploadFixtures';

/**
 * J5 batch cancel under concurrency, and the lock order (job, then attempt) that keeps it
 * from deadlocking with the recognition hot path.
 */
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire({ WORKER_CONCURRENCY: '16' });
  ws = await quire.workspace();
  worker = await quire.newWorker();
  running = worker.run();
});
afterEach(async () => {
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});
afterAll(async () => {
  worker?.shutdown();
  await running;
  await quire?.close();
});

async function ingestBatch(itemId: string, simulated: Record<string, unknown>, files = 2) {
  const form = new FormData();
  form.append('itemId', itemId);
  for (let i = 0; i < files; i++) {
    const size = 40 + i;
    form.append(
      'files[]',
      new Blob([new Uint8Array(png(size, size))], { type: 'image/png' }),
      `p${i}.png`,
    );
  }
  return ingestWithJobs(quire, ws, form, { provider: 'simulated', options: { simulated } });
}

/** Waits until some backend of this test's database waits for a row lock. */
async function untilWaitingOnLock() {
  await eventually(
    async () => {
      const { rows } = await quire.db.pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return rows[0].n > 0 ? true : undefined;
    },
    10_000,
    20,
  );
}

describe('batch cancel (J5) and lock order (A1)', () => {
  it('J5 a Temporal cancel that fails in the middle of a batch cancel still hands the batch blobs to cleanup; the workflows stop on their own', async () => {
    const { result, records } = await ingestBatch('unreachable', { lines: 40, latencyMs: 100 });
    // A client whose Temporal does not answer: every workflow cancel fails.
    const unreachable = new Client({
      connection: Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 500 }),
    });
    const client = QuireClient.fromConfig(quire.config, unreachable, createJobStore(quire.db.pool));
    const canceled = await client.cancelBatch(ws, result.batchId);
    expect(canceled).toEqual({ canceled: 2, releasedPages: 2 });
    const { rows } = await quire.db.pool.query(
      'SELECT count(*)::int AS n FROM pages WHERE id = ANY($1) AND deleted_at IS NOT NULL AND blob_key IS NULL',
      [result.pages.map((p) => p.pageId)],
    );
    expect(rows[0].n).toBe(2);
    // Not told by Temporal, each workflow finds its token dead and ends canceled.
    for (const r of records) {
      const outcome = await quire.temporal.workflow.getHandle(r.workflowId).result();
      expect(outcome.status).toBe('canceled');
    }
    await unreachable.connection.close().catch(() => {});
  });

  it('J5 batch cancel never tombstones a page whose new job was created concurrently', async () => {
    const { result, records } = await ingestBatch('racing', { lines: 40, latencyMs: 100 });
    await cancelBatch(quire.db.pool, ws, result.batchId);
    const [first] = result.pages;
    // A re-run of the first page, committed while the release waits for the page lock.
    let release: Promise<{ pages: number }> | undefined;
    const rerun = await withTransaction(quire.db.pool, async (tx) => {
      const created = await createJob(tx, {
        workspaceId: ws,
        pageId: first!.pageId,
        snapshot: buildSnapshot({ provider: 'simulated', options: { simulated: { lines: 1 } } }),
      });
      release = createJobStore(quire.db.pool).releaseIncompleteBatch(ws, result.batchId);
      await untilWaitingOnLock();
      return created.job;
    });
    expect((await release!).pages).toBe(1);
    const page = await quire.db.pool.query('SELECT deleted_at, blob_key FROM pages WHERE id = $1', [
      first!.pageId,
    ]);
    expect(page.rows[0].deleted_at).toBeNull();
    expect(page.rows[0].blob_key).not.toBeNull();
    await cancelJob(quire.db.pool, ws, rerun.id);
    for (const r of records) await quire.temporal.workflow.getHandle(r.workflowId).cancel();
  });

  it('A1 lock order: a line checkpoint waits behind a cancel holding the job, then finds its token dead; never a deadlock', async () => {
    const pageId = await quire.page(ws);
    const store = createJobStore(quire.db.pool);
    const { job } = await store.createJob({
      workspaceId: ws,
      pageId,
      snapshot: buildSnapshot({ provider: 'simulated', options: { simulated: { lines: 2 } } }),
    });
    const tokenHash = hashToken(newAttemptToken());
    const claim = await claimAttempt(quire.db.pool, {
      jobId: job.id,
      owner: 't',
      tokenHash,
      maxAttempts: 5,
    });
    if (claim.state !== 'claimed') throw new Error(`not claimed: ${claim.state}`);
    const fence = { jobId: job.id, attemptNumber: claim.attemptNumber, tokenHash };
    const call = {
      workspaceId: ws,
      by: { provider: 'simulated', price: {} },
      cost: { units: 1, unit: 'line' as const },
    };
    let checkpoint: Promise<unknown> | undefined;
    // The cancel's order: the job first, then its attempt.
    await withTransaction(quire.db.pool, async (tx) => {
      await tx.query('SELECT 1 FROM transcription_jobs WHERE id = $1 FOR UPDATE', [job.id]);
      checkpoint = saveSegmentCheckpoint(
        quire.db.pool,
        fence,
        0,
        { text: 'x', confidence: 1 },
        call,
      ).catch((error: unknown) => error);
      await untilWaitingOnLock();
      await tx.query(
        `UPDATE transcription_job_attempts SET outcome = 'canceled', ended_at = now() WHERE job_id = $1 AND outcome = 'running'`,
        [job.id],
      );
      await tx.query(
        `UPDATE transcription_jobs SET status = 'canceled', ended_at = now(), stage = 'done' WHERE id = $1`,
        [job.id],
      );
    });
    const error = (await checkpoint) as Error;
    expect(error?.name).toBe('StaleAttempt');
    const saved = await quire.db.pool.query(
      'SELECT count(*)::int AS n FROM job_checkpoints WHERE job_id = $1',
      [job.id],
    );
    expect(saved.rows[0].n).toBe(0);
  });

  it('A1 J5 a 500-page batch canceled through the API while it is recognizing: 200, no deadlock, nothing left running', async () => {
    const { apiKey } = await createWorkspace(quire.db.pool, 'Stress').then(async (created) => {
      ws500 = created.workspace.id;
      return created;
    });
    configureWeb({ ...quire.config, TEMPORAL_ADDRESS: temporalAddress() });
    const route: RouteModule = await import(
      '../../web/app/api/v1/workspaces/[ws]/batches/[batchId]/cancel/route'
    );
    const batchId = await createBatch(quire.db.pool, ws500);
    const pageIds: number[] = [];
    for (let i = 0; i < 500; i++) pageIds.push(await quire.page(ws500));
    await quire.db.pool.query(
      `INSERT INTO batch_pages (batch_id, ordinal, page_id)
       SELECT $1, ordinality - 1, page_id FROM unnest($2::bigint[]) WITH ORDINALITY AS t(page_id, ordinality)`,
      [batchId, pageIds],
    );
    const began = Date.now();
    const jobIds: string[] = [];
    for (let i = 0; i < pageIds.length; i += 25) {
      const started = await Promise.all(
        pageIds.slice(i, i + 25).map((pageId) =>
          quire.client.startJob({
            workspaceId: ws500,
            pageId,
            batchId,
            options: { simulated: { lines: 20, latencyMs: 40 } },
          }),
        ),
      );
      jobIds.push(...started.map((s) => s.jobId));
    }
    process.stderr.write(`500 jobs started in ${Date.now() - began} ms\n`);
    const deadlocksBefore = await deadlocks();
    await eventually(async () => {
      const { rows } = await quire.db.pool.query(
        `SELECT count(*)::int AS n FROM transcription_job_attempts a JOIN transcription_jobs j ON j.id = a.job_id
          WHERE j.batch_id = $1 AND a.outcome = 'running'`,
        [batchId],
      );
      return rows[0].n >= 8 ? true : undefined;
    }, 60_000);
    const response = await call(
      route,
      'POST',
      `/workspaces/${ws500}/batches/${batchId}/cancel`,
      {
        ws: String(ws500),
        batchId,
      },
      { key: apiKey },
    );
    expect(response.status).toBe(200);
    const { rows } = await quire.db.pool.query(
      `SELECT count(*)::int AS active FROM transcription_jobs WHERE batch_id = $1 AND status IN ('pending', 'running')`,
      [batchId],
    );
    expect(rows[0].active).toBe(0);
    // Count deadlocks once every workflow of the batch has run into its dead token or its
    // cancel and closed: after that nothing of this batch writes to the database.
    await eventually(
      async () => {
        // Workspace ids repeat across the test databases; the task queue is this file's own.
        const { count } = await quire.temporal.workflow.count(
          `TaskQueue = '${quire.config.QUIRE_TASK_QUEUE}' AND QuireWorkspaceId = ${ws500} AND ExecutionStatus = 'Running'`,
        );
        return count === 0 ? true : undefined;
      },
      120_000,
      500,
    );
    expect(await deadlocks()).toBe(deadlocksBefore);
    const failedOnDeadlock = await quire.db.pool.query(
      `SELECT count(*)::int AS n FROM transcription_job_attempts WHERE job_id = ANY($1) AND error_detail ILIKE '%deadlock%'`,
      [jobIds],
    );
    expect(failedOnDeadlock.rows[0].n).toBe(0);
    for (const id of jobIds.slice(0, 20)) {
      expect((await listAttempts(quire.db.pool, id)).every((a) => a.outcome !== 'running')).toBe(
        true,
      );
      expect((await getJob(quire.db.pool, ws500, id))?.status).not.toBe('running');
    }
  }, 180_000);
});

let ws500 = 0;

async function deadlocks(): Promise<number> {
  await quire.db.pool.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await quire.db.pool.query(
    'SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return rows[0].n;
}
