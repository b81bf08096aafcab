import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditInvariants } from '../../db/audit';
import { pageBound, type QuireWorker } from '../../worker/createWorker';
import { createTestQuire, type TestQuire } from '../support/quire';
import { eventually } from '../support/wait';
import { spawnWorker, waitHealthy } from '../support/workerProcess';

/**
 * M5 through the real Temporal server (fairness keys on, as Quire runs it): a workspace that
 * floods the queue does not hold back a small one. Measured in bench/fairness; here, the
 * order: B's job commits while most of A's backlog is still waiting.
 */
const FLOOD = 60;
const SLOTS = 2;
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;

beforeAll(async () => {
  // Two activity slots: A's backlog forms at once, and every slot that frees is contested.
  quire = await createTestQuire({ WORKER_CONCURRENCY: String(SLOTS) });
  worker = await quire.newWorker();
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await quire?.close();
});

async function activeJobs(workspaceId: number): Promise<number> {
  const { rows } = await quire.db.pool.query(
    `SELECT count(*)::int AS n FROM transcription_jobs WHERE workspace_id = $1 AND status IN ('pending', 'running')`,
    [workspaceId],
  );
  return rows[0].n;
}

const simulated = { lines: 3, latencyMs: 40 };

/** Starts a simulated job for each of `count` new pages of the workspace; their workflow ids. */
async function startPages(workspaceId: number, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const pageId = await quire.page(workspaceId);
    ids.push(
      (await quire.client.startJob({ workspaceId, pageId, options: { simulated } })).workflowId,
    );
  }
  return ids;
}

async function allCompleted(workflowIds: string[]): Promise<void> {
  for (const id of workflowIds) {
    expect((await quire.temporal.workflow.getHandle(id).result()).status).toBe('completed');
  }
}

describe('fair share (M5)', () => {
  it("M5 a small workspace's job commits before a flooding workspace's backlog drains", async () => {
    const A = await quire.workspace('Flooding archive');
    const B = await quire.workspace('Small archive');
    const flood = await startPages(A, FLOOD);
    const [small] = await startPages(B, 1);
    const outcome = await quire.temporal.workflow.getHandle(small!).result();
    const waitingOfA = await activeJobs(A);
    expect(outcome.status).toBe('completed');
    // First in, first out, B's job would be among the last of the flood to commit; with a
    // fair share of every freed slot it overtakes most of A's queue.
    expect(waitingOfA).toBeGreaterThanOrEqual(FLOOD / 2);

    await allCompleted(flood);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });

  it("M5 a worker holds at most its page bound in hand while a flood waits, so a small workspace's pages queue behind no more than that on the sticky queue", async () => {
    const A = await quire.workspace('Second flood');
    const B = await quire.workspace('Second small archive');
    const flood = await startPages(A, FLOOD);
    // A's pages claimed and not yet ended: the pages this one worker has in hand.
    let mostInHand = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await quire.db.pool.query(
          `SELECT count(*)::int AS n FROM transcription_jobs WHERE workspace_id = $1 AND status = 'running'`,
          [A],
        );
        mostInHand = Math.max(mostInHand, rows[0].n);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    await allCompleted(await startPages(B, 3));
    const waitingOfA = await activeJobs(A);
    await allCompleted(flood);
    sampling = false;
    await sampler;
    // Without the bound the worker takes a new page at every poll of the task queue: A's pages
    // in hand grow past the dozens (125 of them behind bench/fairness's flood) and B's later
    // workflow tasks wait behind all of theirs. One more than the bound is the poll that may
    // pass after its bounded wait on a loaded machine.
    expect(mostInHand).toBeGreaterThan(0);
    expect(mostInHand).toBeLessThanOrEqual(pageBound(SLOTS) + 1);
    expect(waitingOfA).toBeGreaterThanOrEqual(FLOOD / 2);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });

  it('M5 P6 a page committed by an engine step on another worker process leaves the hand of the process that claimed it', async () => {
    const C = await quire.workspace('Two workers');
    // Activity tasks go to either process; each page's workflow stays with the one that claimed it.
    const other = spawnWorker(quire, 'm5-other', { WORKER_CONCURRENCY: '4', LOG_LEVEL: 'warn' });
    try {
      await waitHealthy(other);
      const ids = await startPages(C, 20);
      await allCompleted(ids);
      const { rows } = await quire.db.pool.query(
        `SELECT count(*)::int AS n FROM attempt_steps s
           JOIN transcription_job_attempts a USING (job_id, attempt_number)
           JOIN transcription_jobs j ON j.id = a.job_id
          WHERE j.workspace_id = $1 AND s.worker <> a.owner`,
        [C],
      );
      // Some pages were claimed by one process and read and committed by the other.
      expect(rows[0].n).toBeGreaterThan(0);
      // Their last workflow task releases them where they were claimed; a lost release would
      // count for a minute, holding back this worker's next pages.
      await eventually(async () => (worker.pagesInHand.size === 0 ? true : undefined), 5_000);
    } finally {
      other.child.kill('SIGTERM');
      await other.exited;
    }
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });
});
