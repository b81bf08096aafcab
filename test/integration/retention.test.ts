import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitPage } from '../../activities/transcriptStages';
import { auditInvariants } from '../../db/audit';
import type { Queryable } from '../../db/pool';
import { eventsPurgedBefore, purgeOldEvents } from '../../db/retention';
import { fanOutEvents } from '../../db/webhooks';
import { createWorkspace } from '../../db/workspaces';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { seedRunningAttempt } from '../support/pages';

/**
 * O3 event retention and the invariant auditor (E1) against real Postgres, with rows made old
 * by moving their times back: retention removes the completion events of jobs that ended long
 * ago, and the auditor knows it did.
 */
let db: TestDatabase;
let workspaceId: number;
const DAY = 86_400_000;

beforeAll(async () => {
  db = await createTestDatabase();
  workspaceId = (await createWorkspace(db.pool, 'Retention')).workspace.id;
});
afterAll(async () => {
  await db?.drop();
});

/** A job committed through the real claim and commit, with its completion event. */
async function completedJob(itemId: string): Promise<string> {
  const { job, fence } = await seedRunningAttempt(db.pool, {
    workspaceId,
    itemId,
    width: 100,
    height: 100,
  });
  const committed = await commitPage(db.pool, fence, {
    segments: [
      { index: 0, target: { kind: 'xywh', box: { x: 0, y: 0, w: 9, h: 9 } }, text: 'line' },
    ],
    completed: 1,
    failed: 0,
    total: 1,
    engine: { engine: 'simulated', model: 'sim-1', version: '1' },
  });
  expect(committed.state).toBe('committed');
  return job.id;
}

/** Moves a job's end and all of its events `days` into the past. */
async function age(jobId: string, days: number) {
  await db.pool.query(
    `UPDATE transcription_jobs SET ended_at = ended_at - make_interval(days => $2) WHERE id = $1`,
    [jobId, days],
  );
  await db.pool.query(
    `UPDATE event_outbox SET created_at = created_at - make_interval(days => $2) WHERE data->>'jobId' = $1`,
    [jobId, days],
  );
}

const completionEvents = async (jobId: string) =>
  (
    await db.pool.query(
      `SELECT 1 FROM event_outbox WHERE type = 'dev.quire.transcription.completed' AND data->>'jobId' = $1`,
      [jobId],
    )
  ).rowCount;

describe('event retention and the auditor (O3, E1)', () => {
  it('O3 E1 retention removes the completion events of jobs that ended before the period, and the auditor still finds nothing', async () => {
    const old = await completedJob('old');
    const recent = await completedJob('recent');
    await age(old, 40);
    await age(recent, 5);
    // The relay has fanned every event out: nothing holds them back.
    await fanOutEvents(db.pool);
    expect(await auditInvariants(db.pool)).toEqual([]);

    const purged = await purgeOldEvents(db.pool, 30);
    expect(purged.events).toBeGreaterThanOrEqual(1);
    expect(await completionEvents(old)).toBe(0);
    expect(await completionEvents(recent)).toBe(1);
    expect(await auditInvariants(db.pool)).toEqual([]);
    const mark = await eventsPurgedBefore(db.pool);
    expect(mark).toBeInstanceOf(Date);
    expect(Math.abs(mark!.getTime() - (Date.now() - 30 * DAY))).toBeLessThan(60_000);

    // A shorter retention later moves the mark forward; a longer one never moves it back.
    await purgeOldEvents(db.pool, 90);
    expect((await eventsPurgedBefore(db.pool))!.getTime()).toBe(mark!.getTime());
  });

  it('D11 retention deletes in batches: no statement removes more rows than the batch, and every old row goes', async () => {
    const jobs = [];
    for (const item of ['b1', 'b2', 'b3', 'b4', 'b5']) jobs.push(await completedJob(item));
    for (const jobId of jobs) await age(jobId, 60);
    await fanOutEvents(db.pool);
    const removedPerDelete: number[] = [];
    const counting = {
      query: async (sql: string, values?: unknown[]) => {
        const result = await db.pool.query(sql, values);
        if (/^\s*DELETE/i.test(sql)) removedPerDelete.push(result.rowCount ?? 0);
        return result;
      },
    } as unknown as Queryable;
    const purged = await purgeOldEvents(counting, 30, new Date(), 2);
    expect(purged.events).toBeGreaterThanOrEqual(5);
    expect(Math.max(...removedPerDelete)).toBe(2);
    expect(removedPerDelete.reduce((a, b) => a + b, 0)).toBe(purged.events + purged.deliveries);
    for (const jobId of jobs) expect(await completionEvents(jobId)).toBe(0);
    expect(await auditInvariants(db.pool)).toEqual([]);
  });

  it('E1 the auditor still reports a missing completion event that retention cannot have removed', async () => {
    const recent = await completedJob('lost-event');
    await fanOutEvents(db.pool);
    await purgeOldEvents(db.pool, 30);
    // Lost by something other than retention: the job ended after the retention mark.
    await db.pool.query(
      `DELETE FROM event_outbox WHERE type = 'dev.quire.transcription.completed' AND data->>'jobId' = $1`,
      [recent],
    );
    const violations = await auditInvariants(db.pool);
    expect(violations).toEqual([
      {
        check: expect.stringMatching(/^E1 a completed job has exactly one completion event/),
        subjects: [recent],
      },
    ]);
    // Two completion events for one job are wrong however old the job is.
    await db.pool.query(
      `INSERT INTO event_outbox (workspace_id, type, subject, data)
       SELECT workspace_id, type, subject, data FROM event_outbox
        WHERE type = 'dev.quire.transcription.completed' AND data->>'jobId' <> $1 LIMIT 1`,
      [recent],
    );
    const [row] = (
      await db.pool.query(
        `SELECT data->>'jobId' AS job FROM event_outbox
          WHERE type = 'dev.quire.transcription.completed' ORDER BY id DESC LIMIT 1`,
      )
    ).rows;
    await db.pool.query(
      `UPDATE transcription_jobs SET ended_at = now() - interval '400 days' WHERE id = $1`,
      [row.job],
    );
    const twice = await auditInvariants(db.pool);
    expect(twice.find((v) => v.check.startsWith('E1 a completed job'))?.subjects.sort()).toEqual(
      [recent, row.job].sort(),
    );
    // Put things right so nothing else in this file trips over them.
    await db.pool.query(`DELETE FROM event_outbox WHERE id = (SELECT max(id) FROM event_outbox)`);
  });
});
