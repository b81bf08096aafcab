import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditInvariants } from '../../db/audit';
import { createTestQuire, type TestQuire, untilStatus } from '../support/quire';

/**
 * P8: interactive first. One worker slot, a bulk backlog on the simulated engine, then a page
 * a person waits for (`priority: 'interactive'`, as the console's re-run and the API ask) and,
 * at the same moment, one more bulk page: all in the same workspace, so fairness (M5) cannot
 * be what moves the person's page ahead.
 */
// Large enough that the person's page lands well before the backlog drains, also on a loaded
// machine (13 of 24 was seen under load).
const BACKLOG = 48;
const SIMULATED = { lines: 2, latencyMs: 60, readPages: true };
let quire: TestQuire;
let worker: Worker;
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
    process.stdout.write(
      `${JSON.stringify({ bench: 'p8-test', backlog: BACKLOG, backlogDoneWhenPersonCommitted: doneWhenPersonCommitted })}\n`,
    );
    // Part of the backlog was still waiting (10 to 35 of 48 done in runs here; all 48 without
    // the priority key), and so was the bulk page sent just before it.
    expect(doneWhenPersonCommitted).toBeLessThan(BACKLOG);
    expect(bulkStatus).not.toBe('completed');
    for (const jobId of [...backlog, bulk.jobId])
      await untilStatus(quire, ws, jobId, 'completed', 120_000);
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
