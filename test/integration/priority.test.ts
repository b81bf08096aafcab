import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { fairnessKeyFor, interactiveTaskQueue, PRIORITY_KEYS } from '../../core/temporal';
import { createAccount, putMember } from '../../db/accounts';
import { auditInvariants } from '../../db/audit';
import { createSession } from '../../db/sessions';
import { addApiKey } from '../../db/workspaces';
import { configureWeb } from '../../web/lib/server';
import { SESSION_COOKIE } from '../../web/lib/session';
import type { QuireWorker } from '../../worker/createWorker';
import { uploadWithKey } from '../support/api';
import { createTestQuire, type TestQuire, temporalAddress, untilStatus } from '../support/quire';
import { file, png, uploadRequest } from '../support/uploadFixtures';

/**
 * P8: interactive first. One worker slot, a bulk backlog on the simulated engine, then a page
 * a person waits for (`priority: 'interactive'`, as the console's re-run and the API ask) and,
 * at the same moment, one more bulk page: all in the same workspace, so fairness (M5) cannot
 * be what moves the person's page ahead.
 */
// Large enough that the person's page lands well before the backlog drains, also on a loaded
// machine (13 of 24 was seen under load before the worker held fewer workflow tasks).
const BACKLOG = 48;
/**
 * How many backlog pages may commit between the person's submit and its commit: 1 and 3 in
 * runs here. With one activity slot the worker holds little, so the previous worker gave 2 as
 * well; the full-worker test below is the one the worker's limit is seen in.
 */
const OVERTAKEN_AT_MOST = 8;
const SIMULATED = { lines: 2, latencyMs: 60, readPages: true };
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire({ WORKER_CONCURRENCY: '1' });
  ws = await quire.workspace();
  worker = await quire.newWorker('priority-worker');
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await quire?.close();
});

async function completed(jobIds: string[]): Promise<number> {
  const { rows } = await quire.db.pool.query(
    `SELECT count(*)::int AS n FROM transcription_jobs WHERE id = ANY($1) AND status = 'completed'`,
    [jobIds],
  );
  return rows[0].n;
}

describe('interactive first (P8)', () => {
  it('P8 a page a person submits behind a bulk backlog on the simulated engine commits before the backlog drains, ahead of a bulk page sent with it', async () => {
    const backlog: string[] = [];
    for (let i = 0; i < BACKLOG; i++) {
      const pageId = await quire.page(ws);
      const job = await quire.client.startJob({
        workspaceId: ws,
        pageId,
        options: { simulated: SIMULATED },
      });
      backlog.push(job.jobId);
    }
    await untilStatus(quire, ws, backlog[0]!, 'completed', 60_000);
    const [personPage, bulkPage] = [await quire.page(ws), await quire.page(ws)];
    const doneWhenPersonSubmitted = await completed(backlog);
    const bulk = await quire.client.startJob({
      workspaceId: ws,
      pageId: bulkPage,
      options: { simulated: SIMULATED },
    });
    const person = await quire.client.startJob({
      workspaceId: ws,
      pageId: personPage,
      options: { simulated: SIMULATED },
      priority: 'interactive',
    });
    await untilStatus(quire, ws, person.jobId, 'completed', 60_000);
    const doneWhenPersonCommitted = await completed(backlog);
    const bulkStatus = (
      await quire.db.pool.query('SELECT status FROM transcription_jobs WHERE id = $1', [bulk.jobId])
    ).rows[0].status;
    const overtakenBy = doneWhenPersonCommitted - doneWhenPersonSubmitted;
    process.stdout.write(
      `${JSON.stringify({ bench: 'p8-test', backlog: BACKLOG, doneWhenPersonSubmitted, doneWhenPersonCommitted, overtakenBy })}\n`,
    );
    // The person's page waits only for what the worker already holds: the page in its one
    // activity slot and the workflow tasks it has taken (worker/createWorker.ts
    // `workflowTaskSlots`), never for the queue behind them. OVERTAKEN_AT_MOST leaves room for
    // a loaded machine; without the priority key the whole backlog goes first.
    expect(overtakenBy).toBeLessThanOrEqual(OVERTAKEN_AT_MOST);
    expect(doneWhenPersonCommitted).toBeLessThan(BACKLOG);
    expect(bulkStatus).not.toBe('completed');
    for (const jobId of [...backlog, bulk.jobId])
      await untilStatus(quire, ws, jobId, 'completed', 120_000);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });

  it("P8 a person's page runs on the interactive task queue with slots of its own: it commits while a bulk page holds the worker's only slot", async () => {
    const slow = await quire.client.startJob({
      workspaceId: ws,
      pageId: await quire.page(ws),
      // About 6 s in the engine: the one activity slot stays taken throughout.
      options: { simulated: { lines: 4, latencyMs: 1_500, readPages: true } },
    });
    await untilStatus(quire, ws, slow.jobId, 'running', 30_000);
    const person = await quire.client.startJob({
      workspaceId: ws,
      pageId: await quire.page(ws),
      options: { simulated: SIMULATED },
      priority: 'interactive',
    });
    await untilStatus(quire, ws, person.jobId, 'completed', 30_000);
    const slowStatus = (
      await quire.db.pool.query('SELECT status FROM transcription_jobs WHERE id = $1', [slow.jobId])
    ).rows[0].status;
    expect(slowStatus).toBe('running');
    const queues = await Promise.all(
      [person, slow].map(
        async (job) =>
          (await quire.temporal.workflow.getHandle(job.workflowId).describe()).taskQueue,
      ),
    );
    expect(queues).toEqual([
      interactiveTaskQueue(quire.config.QUIRE_TASK_QUEUE),
      quire.config.QUIRE_TASK_QUEUE,
    ]);
    await untilStatus(quire, ws, slow.jobId, 'completed', 60_000);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });

  it("P8 while a person's page reads, the worker claims no bulk page and starts no bulk engine step (bounded wait) instead of sharing its cores", async () => {
    const person = await quire.client.startJob({
      workspaceId: ws,
      pageId: await quire.page(ws),
      // One read of 1.2 s: inside the gate's 2 s bound.
      options: { simulated: { lines: 1, latencyMs: 1_200, readPages: true } },
      priority: 'interactive',
    });
    // Claimed, and well inside its read (the read takes 1.2 s).
    await untilStatus(quire, ws, person.jobId, 'running', 20_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const bulk = [];
    for (let i = 0; i < 2; i++) {
      bulk.push(
        await quire.client.startJob({
          workspaceId: ws,
          pageId: await quire.page(ws),
          options: { simulated: SIMULATED },
        }),
      );
    }
    for (const job of [person, ...bulk])
      await untilStatus(quire, ws, job.jobId, 'completed', 60_000);
    const { rows } = await quire.db.pool.query(
      `SELECT (SELECT max(occurred_at) FROM provider_calls WHERE job_id = $1 AND operation = 'read') AS person_read,
              (SELECT min(occurred_at) FROM provider_calls WHERE job_id = ANY($2)) AS bulk_first,
              (SELECT min(started_at) FROM transcription_job_attempts WHERE job_id = ANY($2)) AS bulk_claimed`,
      [person.jobId, bulk.map((job) => job.jobId)],
    );
    // Without the gate the bulk pages' first engine call ends ~60 ms after they start, long
    // before the person's 1.2 s read is saved.
    expect(rows[0].bulk_first.getTime()).toBeGreaterThan(rows[0].person_read.getTime());
    // Nor is a bulk page claimed (its attempt started) while the person's page runs.
    expect(rows[0].bulk_claimed.getTime()).toBeGreaterThan(rows[0].person_read.getTime());
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  });

  it('P8 an unknown priority is refused with a stable code and starts nothing', async () => {
    const pageId = await quire.page(ws);
    await expect(
      quire.client.startJob({
        workspaceId: ws,
        pageId,
        // @ts-expect-error: not a priority class
        priority: 'urgent',
      }),
    ).rejects.toMatchObject({ code: 'invalid_job_request' });
    const { rows } = await quire.db.pool.query(
      'SELECT count(*)::int AS n FROM transcription_jobs WHERE page_id = $1',
      [pageId],
    );
    expect(rows[0].n).toBe(0);
  });
});

/**
 * P8 with a full worker: eight activity slots and a backlog that keeps them and the worker's
 * workflow tasks busy, so many bulk workflows are in flight when the person's page comes. The
 * person's page waits only for what the worker already holds (its eight activities and the
 * workflow tasks it has taken), never for the queue behind them: before the worker held at
 * most half its activity slots in workflow tasks, it held 40, and the person's page waited
 * behind those too.
 */
describe('interactive first on a full worker (P8)', () => {
  const WIDE_BACKLOG = 200;
  const WIDE = { lines: 4, latencyMs: 60, readPages: true };
  /**
   * Eight activities and four workflow tasks in the worker, twice over for a loaded machine:
   * 8 and 10 in runs here, 41 with the previous worker's 40 workflow tasks.
   */
  const WIDE_OVERTAKEN_AT_MOST = 24;
  let full: TestQuire;
  let fullWorker: QuireWorker;
  let fullRunning: Promise<void>;
  let wsFull: number;

  beforeAll(async () => {
    full = await createTestQuire({ WORKER_CONCURRENCY: '8' });
    wsFull = await full.workspace();
    fullWorker = await full.newWorker('priority-full-worker');
    fullRunning = fullWorker.run();
  });

  afterAll(async () => {
    fullWorker?.shutdown();
    await fullRunning;
    await full?.close();
  });

  async function fullCompleted(jobIds: string[]): Promise<number> {
    const { rows } = await full.db.pool.query(
      `SELECT count(*)::int AS n FROM transcription_jobs WHERE id = ANY($1) AND status = 'completed'`,
      [jobIds],
    );
    return rows[0].n;
  }

  it("P8 behind a backlog that fills an eight-slot worker, a person's page waits only for what the worker already holds", async () => {
    const pages: number[] = [];
    for (let i = 0; i < WIDE_BACKLOG; i++) pages.push(await full.page(wsFull));
    const backlog: string[] = [];
    for (let i = 0; i < pages.length; i += 16) {
      const started = await Promise.all(
        pages
          .slice(i, i + 16)
          .map((pageId) =>
            full.client.startJob({ workspaceId: wsFull, pageId, options: { simulated: WIDE } }),
          ),
      );
      backlog.push(...started.map((job) => job.jobId));
    }
    await untilStatus(full, wsFull, backlog[0]!, 'completed', 60_000);
    const personPage = await full.page(wsFull);
    const doneWhenPersonSubmitted = await fullCompleted(backlog);
    const person = await full.client.startJob({
      workspaceId: wsFull,
      pageId: personPage,
      options: { simulated: WIDE },
      priority: 'interactive',
    });
    await untilStatus(full, wsFull, person.jobId, 'completed', 60_000);
    const overtakenBy = (await fullCompleted(backlog)) - doneWhenPersonSubmitted;
    process.stdout.write(
      `${JSON.stringify({ bench: 'p8-test-full', backlog: WIDE_BACKLOG, doneWhenPersonSubmitted, overtakenBy })}\n`,
    );
    expect(doneWhenPersonSubmitted + overtakenBy).toBeLessThan(WIDE_BACKLOG);
    expect(overtakenBy).toBeLessThanOrEqual(WIDE_OVERTAKEN_AT_MOST);
    for (const jobId of backlog) await untilStatus(full, wsFull, jobId, 'completed', 180_000);
    expect(await auditInvariants(full.db.pool)).toEqual([]);
  });
});

/**
 * P8 from the console: a page a person uploads is started `interactive`, beside its
 * workspace's fairness key (M5); the same file sent by the API's batches is bulk. No worker
 * polls this Quire's queue, so each workflow is read as started, before anything has run.
 */
describe('interactive first from the console (P8)', () => {
  let web: TestQuire;
  let wsWeb: number;

  beforeAll(async () => {
    web = await createTestQuire({
      QUIRE_BLOB_DIR: mkdtempSync(join(tmpdir(), 'quire-priority-blobs-')),
      TEMPORAL_ADDRESS: temporalAddress(),
    });
    configureWeb(web.config);
    wsWeb = await web.workspace('Console uploads');
  });

  afterAll(async () => {
    await web?.close();
  });

  /** The Temporal priority each job of an upload's answer was started with. */
  async function prioritiesOf(response: Response | { json: unknown }) {
    const body = (response instanceof Response ? await response.json() : response.json) as {
      batchId: string;
    };
    const { rows } = await web.db.pool.query(
      'SELECT id, workflow_id FROM transcription_jobs WHERE batch_id = $1',
      [body.batchId],
    );
    expect(rows.length).toBe(1);
    return Promise.all(
      rows.map(async (row) => {
        const described = await web.temporal.workflow.getHandle(row.workflow_id).describe();
        // Nothing is left waiting on the queue once its priority is read.
        await web.client.cancelJob(wsWeb, row.id);
        return described.raw.workflowExecutionInfo?.priority;
      }),
    );
  }

  /** An editor of `workspaceId` uploads `pages` from the console (session cookie, Origin). */
  async function consoleUpload(workspaceId: number, pages: number): Promise<Response> {
    const account = await createAccount(web.db.pool, CLI_ACTOR, {
      email: `uploader-${workspaceId}@priority.test`,
      name: 'Uploader',
      passwordHash: null,
    });
    await putMember(web.db.pool, CLI_ACTOR, { workspaceId, accountId: account.id, role: 'editor' });
    const session = await createSession(web.db.pool, { accountId: account.id, workspaceId }, 3600);
    const route = await import('../../web/app/console-api/batches/route');
    const response = await route.POST(
      uploadRequest(
        Array.from({ length: pages }, (_, i) => file(png(40 + i, 20), `page-${i}.png`)),
        {
          cookie: `${SESSION_COOKIE}=${session}`,
          origin: new URL(web.config.QUIRE_PUBLIC_URL).origin,
        },
      ),
    );
    expect(response.status).toBe(201);
    return response;
  }

  it('P8 a page uploaded from the console starts its workflow with the interactive priority key and its workspace fairness key', async () => {
    const response = await consoleUpload(wsWeb, 1);
    expect(await prioritiesOf(response)).toEqual([
      expect.objectContaining({
        priorityKey: PRIORITY_KEYS.interactive,
        fairnessKey: fairnessKeyFor(wsWeb),
      }),
    ]);
  });

  it('P8 the same page sent through the API batches stays bulk, with its workspace fairness key', async () => {
    const key = await addApiKey(web.db.pool, wsWeb, 'priority test');
    const upload = await uploadWithKey(wsWeb, key);
    expect(upload.status).toBe(201);
    expect(await prioritiesOf(upload)).toEqual([
      expect.objectContaining({
        priorityKey: PRIORITY_KEYS.bulk,
        fairnessKey: fairnessKeyFor(wsWeb),
      }),
    ]);
  });

  it('P8 a console page that waits under its workspace’s active-job cap starts interactive when a slot frees', async () => {
    const capped = await web.workspace('Capped console uploads');
    await web.db.pool.query('UPDATE workspaces SET active_job_cap = 1 WHERE id = $1', [capped]);
    const response = await consoleUpload(capped, 2);
    const { batchId } = (await response.json()) as { batchId: string };
    const { rows } = await web.db.pool.query(
      `SELECT id, workflow_id, priority, workflow_started_at IS NOT NULL AS started
         FROM transcription_jobs WHERE batch_id = $1 ORDER BY started DESC`,
      [batchId],
    );
    // The job is recorded interactive, not only its first start.
    expect(rows.map((r) => [r.started, r.priority])).toEqual([
      [true, 'interactive'],
      [false, 'interactive'],
    ]);
    await web.client.cancelJob(capped, rows[0].id);
    await web.client.dispatchWaitingJobs(capped);
    const described = await web.temporal.workflow.getHandle(rows[1].workflow_id).describe();
    await web.client.cancelJob(capped, rows[1].id);
    expect(described.raw.workflowExecutionInfo?.priority).toEqual(
      expect.objectContaining({
        priorityKey: PRIORITY_KEYS.interactive,
        fairnessKey: fairnessKeyFor(capped),
      }),
    );
  });
});
