import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { auditInvariants } from '../../db/audit';
import { setWorkspaceControls } from '../../db/operatorControls';
import type { QuireWorker } from '../../worker/createWorker';
import { createSlotDispatcher, type SlotDispatcher } from '../../worker/slotDispatcher';
import { createTestQuire, eventually, silentLogger, type TestQuire } from '../support/quire';

/**
 * M4: a workspace's active-job cap, on the real Temporal dev server with a real worker and
 * the simulated engine (a few hundred ms per call, so jobs overlap). Jobs over the cap wait
 * `pending` without a workflow; the dispatcher admits them in submission order as slots free.
 */
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let stopWorker: () => void;
let dispatcher: SlotDispatcher | undefined;

const SLOW = { simulated: { latencyMs: 150, lines: 3 } };

interface Row {
  id: string;
  status: string;
  awaiting_slot: boolean;
  workflow_started_at: Date | null;
}

async function jobsOf(workspaceId: number): Promise<Row[]> {
  const { rows } = await quire.db.pool.query<Row>(
    `SELECT id, status, awaiting_slot, workflow_started_at FROM transcription_jobs
      WHERE workspace_id = $1 ORDER BY created_at, id`,
    [workspaceId],
  );
  return rows;
}

const active = (r: Row) => r.status === 'pending' || r.status === 'running';

/**
 * Samples the workspace until every job ended, checking at each sample that at most `cap`
 * jobs hold a slot and that the admitted jobs are a prefix of the submission order.
 */
async function watch(workspaceId: number, cap: number, until: (rows: Row[]) => boolean) {
  let maxHeld = 0;
  const deadline = Date.now() + 90_000;
  for (;;) {
    const rows = await jobsOf(workspaceId);
    const held = rows.filter((r) => active(r) && !r.awaiting_slot).length;
    maxHeld = Math.max(maxHeld, held);
    expect(held).toBeLessThanOrEqual(cap);
    const firstWaiting = rows.findIndex((r) => r.awaiting_slot && r.status === 'pending');
    if (firstWaiting >= 0) {
      // Nothing after the first waiting job was admitted ahead of it.
      expect(rows.slice(firstWaiting).every((r) => r.awaiting_slot || r.status !== 'pending')).toBe(
        true,
      );
      expect(rows.slice(firstWaiting).filter((r) => !r.awaiting_slot && active(r))).toEqual([]);
    }
    for (const r of rows.filter((x) => x.awaiting_slot)) expect(r.workflow_started_at).toBeNull();
    if (until(rows)) return { rows, maxHeld };
    if (Date.now() > deadline) throw new Error('jobs did not finish in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  quire = await createTestQuire();
  worker = await quire.newWorker();
  const stop = new Promise<void>((resolve) => {
    stopWorker = resolve;
  });
  running = worker.runUntil(stop);
});

afterEach(async () => {
  await dispatcher?.stop();
  dispatcher = undefined;
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});

afterAll(async () => {
  stopWorker?.();
  await running;
  await quire?.close();
});

function startDispatcher() {
  dispatcher = createSlotDispatcher({
    pool: quire.db.pool,
    client: quire.client,
    logger: silentLogger,
    databaseUrl: quire.db.url,
    pollIntervalMs: 500,
  });
  return dispatcher.start();
}

describe('M4 active-job cap per workspace', () => {
  it('M4 cap holds with excess jobs waiting in order, without a workflow, and starting as slots free', async () => {
    const ws = await quire.workspace('capped');
    await setWorkspaceControls(quire.db.pool, CLI_ACTOR, ws, { activeJobCap: 2 });
    await startDispatcher();
    const pages: number[] = [];
    for (let i = 0; i < 8; i++) pages.push(await quire.page(ws));
    // Submitted at once: creation and admission race each other and the dispatcher.
    const started = await Promise.all(
      pages.map((pageId) => quire.client.startJob({ workspaceId: ws, pageId, options: SLOW })),
    );
    expect(new Set(started.map((s) => s.status))).toEqual(new Set(['pending']));

    const waitingNow = (await jobsOf(ws)).filter((r) => r.awaiting_slot && r.status === 'pending');
    expect(waitingNow.length).toBeGreaterThanOrEqual(5);
    // A waiting job has no workflow in Temporal yet.
    await expect(
      quire.temporal.workflow.getHandle(`transcription-job-${waitingNow.at(-1)!.id}`).describe(),
    ).rejects.toBeInstanceOf(WorkflowNotFoundError);

    const { rows, maxHeld } = await watch(ws, 2, (r) => r.every((x) => x.status === 'completed'));
    expect(maxHeld).toBe(2);
    expect(rows).toHaveLength(8);
    // Each started after admission and ran to the end: every job was admitted exactly once.
    expect(rows.every((r) => !r.awaiting_slot && r.workflow_started_at !== null)).toBe(true);
  });

  it('M4 waiting is durable: with no dispatcher running jobs stay queued (the J6 reconciler leaves them), and a new dispatcher starts them', async () => {
    const ws = await quire.workspace('durable');
    await setWorkspaceControls(quire.db.pool, CLI_ACTOR, ws, { activeJobCap: 1 });
    const ids: string[] = [];
    const workflowIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const pageId = await quire.page(ws);
      const started = await quire.client.startJob({ workspaceId: ws, pageId, options: SLOW });
      ids.push(started.jobId);
      workflowIds.push(started.workflowId);
    }
    // The first was admitted at creation; nobody dispatches the rest when it ends. Its
    // workflow closing is the last thing of it that could: everything it does is done.
    await eventually(async () =>
      (await jobsOf(ws))[0]!.status === 'completed' ? true : undefined,
    );
    await quire.temporal.workflow.getHandle(workflowIds[0]!).result();
    const stalled = await jobsOf(ws);
    expect(stalled.map((r) => [r.id, r.status, r.awaiting_slot])).toEqual([
      [ids[0], 'completed', false],
      [ids[1], 'pending', true],
      [ids[2], 'pending', true],
    ]);
    // J6: the reconciler starts jobs whose workflow was lost before it started, never these.
    expect(await quire.client.reconcile(0)).toEqual({ started: 0 });
    expect((await jobsOf(ws)).filter((r) => r.awaiting_slot)).toHaveLength(2);
    // A dispatcher started later (another worker process, a restart) finds them in PostgreSQL.
    await startDispatcher();
    const { rows } = await watch(ws, 1, (r) => r.every((x) => x.status === 'completed'));
    expect(rows.map((r) => r.id)).toEqual(ids);
  });

  it('M4 a canceled waiting job never starts, and lifting the cap admits everything waiting', async () => {
    const ws = await quire.workspace('lifted');
    await setWorkspaceControls(quire.db.pool, CLI_ACTOR, ws, { activeJobCap: 1 });
    await startDispatcher();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const pageId = await quire.page(ws);
      ids.push(
        (
          await quire.client.startJob({
            workspaceId: ws,
            pageId,
            options: { simulated: { latencyMs: 400, lines: 4 } },
          })
        ).jobId,
      );
    }
    await quire.client.cancelJob(ws, ids[1]!);
    await setWorkspaceControls(quire.db.pool, CLI_ACTOR, ws, { activeJobCap: null });
    const { rows } = await watch(ws, 4, (r) => r.every((x) => !active(x)));
    expect(rows.map((r) => r.status)).toEqual(['completed', 'canceled', 'completed', 'completed']);
    // The canceled one was never admitted and never had a workflow or an attempt.
    expect(rows[1]).toMatchObject({ awaiting_slot: true, workflow_started_at: null });
    const attempts = await quire.db.pool.query(
      'SELECT count(*)::int AS n FROM transcription_job_attempts WHERE job_id = $1',
      [ids[1]],
    );
    expect(attempts.rows[0].n).toBe(0);
  });
});

describe('D14 bulk jobs admitted at the installation pace', () => {
  let paced: TestQuire;
  let pacedWorker: QuireWorker;
  let pacedRunning: Promise<void>;
  let stopPaced: () => void;

  beforeAll(async () => {
    paced = await createTestQuire({ QUIRE_FLEET_MAX_OPEN_WORKFLOWS: '2' });
    pacedWorker = await paced.newWorker();
    const stop = new Promise<void>((resolve) => {
      stopPaced = resolve;
    });
    pacedRunning = pacedWorker.runUntil(stop);
  });
  afterAll(async () => {
    stopPaced?.();
    await pacedRunning;
    await paced?.close();
  });

  interface PacedRow extends Row {
    priority: string;
  }
  const allJobs = async () =>
    (
      await paced.db.pool.query<PacedRow>(
        `SELECT id, status, awaiting_slot, workflow_started_at, priority FROM transcription_jobs
          ORDER BY created_at, id`,
      )
    ).rows;

  it("D14 with QUIRE_FLEET_MAX_OPEN_WORKFLOWS=2 a bulk upload over two uncapped workspaces keeps at most 2 workflows open, the rest waiting in PostgreSQL without one; a person's page starts at once", async () => {
    dispatcher = createSlotDispatcher({
      pool: paced.db.pool,
      client: paced.client,
      logger: silentLogger,
      databaseUrl: paced.db.url,
      // The wake on a freed slot admits the next job; the poll is only a backstop here.
      pollIntervalMs: 60_000,
    });
    await dispatcher.start();
    const [a, b] = [await paced.workspace('a'), await paced.workspace('b')];
    const pages: Array<[number, number]> = [];
    for (let i = 0; i < 5; i++) pages.push([a, await paced.page(a)]);
    for (let i = 0; i < 3; i++) pages.push([b, await paced.page(b)]);
    await Promise.all(
      pages.map(([workspaceId, pageId]) =>
        paced.client.startJob({ workspaceId, pageId, options: SLOW }),
      ),
    );
    const waiting = (await allJobs()).filter((r) => r.awaiting_slot && r.status === 'pending');
    expect(waiting.length).toBeGreaterThanOrEqual(6);
    await expect(
      paced.temporal.workflow.getHandle(`transcription-job-${waiting.at(-1)!.id}`).describe(),
    ).rejects.toBeInstanceOf(WorkflowNotFoundError);

    // A person's page is not paced: it starts its workflow as it is recorded.
    const person = await paced.client.startJob({
      workspaceId: b,
      pageId: await paced.page(b),
      options: SLOW,
      priority: 'interactive',
    });
    const personRow = (await allJobs()).find((r) => r.id === person.jobId)!;
    expect(personRow).toMatchObject({ awaiting_slot: false, priority: 'interactive' });
    expect(personRow.workflow_started_at).not.toBeNull();

    let maxOpenBulk = 0;
    const deadline = Date.now() + 90_000;
    for (;;) {
      const rows = await allJobs();
      const openBulk = rows.filter((r) => r.priority === 'bulk' && active(r) && !r.awaiting_slot);
      maxOpenBulk = Math.max(maxOpenBulk, openBulk.length);
      expect(openBulk.length).toBeLessThanOrEqual(2);
      for (const r of rows.filter((x) => x.awaiting_slot)) expect(r.workflow_started_at).toBeNull();
      if (rows.every((r) => r.status === 'completed')) break;
      if (Date.now() > deadline) throw new Error('paced jobs did not finish in time');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(maxOpenBulk).toBe(2);
    const rows = await allJobs();
    expect(rows).toHaveLength(9);
    expect(rows.every((r) => !r.awaiting_slot && r.workflow_started_at !== null)).toBe(true);
    expect(await auditInvariants(paced.db.pool)).toEqual([]);
  });
});
