import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitPage } from '../../activities/transcriptStages';
import { auditInvariants } from '../../db/audit';
import { readAllEventsAfter, readEventsAfter, sequenceEvents } from '../../db/events';
import {
  ensureTimePartitions,
  listTimePartitions,
  MONTHS_AHEAD,
  monthStart,
  TIME_PARTITIONED_TABLES,
  type TimePartitionedTable,
} from '../../db/partitions';
import { eventsPurgedBefore, purgeOldEvents, purgeOldProviderCalls } from '../../db/retention';
import { createSubscription, fanOutEvents, recordDeliveryAttempt } from '../../db/webhooks';
import { createWorkspace } from '../../db/workspaces';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { seedRunningAttempt } from '../support/pages';
import {
  createWorkspace as createWebhookWorkspace,
  TEST_SECRET_KEY,
  uniqueSecret,
} from '../support/webhookFixtures';

/**
 * O3/D11 retention by month and the invariant auditor (E1) against real Postgres: retention
 * drops whole partitions of events (with their deliveries and attempts) and of the provider
 * ledger, removes the completion events of jobs that ended long ago, and the auditor knows it
 * did.
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

/** Moves a job's end and all of its events to `at`. */
async function moveTo(jobId: string, at: Date) {
  await db.pool.query(`UPDATE transcription_jobs SET ended_at = $2 WHERE id = $1`, [jobId, at]);
  await db.pool.query(`UPDATE event_outbox SET created_at = $2 WHERE data->>'jobId' = $1`, [
    jobId,
    at,
  ]);
}

const completionEvents = async (jobId: string) =>
  (
    await db.pool.query(
      `SELECT 1 FROM event_outbox WHERE type = 'dev.quire.transcription.completed' AND data->>'jobId' = $1`,
      [jobId],
    )
  ).rowCount;

/** One event of `workspace` created at `at` (its month's partition), stamped with a position. */
async function eventAt(workspace: number, at: Date): Promise<number> {
  const { rows } = await db.pool.query(
    `INSERT INTO event_outbox (workspace_id, type, subject, data, created_at)
     VALUES ($1, 'dev.quire.test', 'x', '{}', $2) RETURNING id`,
    [workspace, at],
  );
  await sequenceEvents(db.pool);
  return rows[0].id;
}

const partitionOf = async (table: string, where: string, values: unknown[]) =>
  (await db.pool.query(`SELECT tableoid::regclass::text AS p FROM ${table} WHERE ${where}`, values))
    .rows[0]?.p as string | undefined;

const partitionNames = async (table: TimePartitionedTable) =>
  (await listTimePartitions(db.pool, table)).map((p) => p.name);

/** The name of the month partition of `table` that starts at `month`. */
const monthName = (table: string, month: Date) =>
  `${table}_p${month.toISOString().slice(0, 7).replace('-', '_')}`;

describe('event retention by month and the auditor (O3, E1, D11)', () => {
  // Time runs forward in these tests: the months ahead are made now, filled, and retention is
  // asked about a day half a year from now, when they are past.
  const later = (months: number, days = 0) =>
    new Date(monthStart(new Date(), months).getTime() + days * DAY);
  const retentionDay = later(6, 5);

  it('E1 the auditor still reports a missing completion event that retention cannot have removed', async () => {
    await completedJob('kept-event');
    const recent = await completedJob('lost-event');
    await fanOutEvents(db.pool);
    await purgeOldEvents(db.pool, 30);
    // Nothing is old enough for retention yet: it dropped nothing and recorded no mark.
    expect(await eventsPurgedBefore(db.pool)).toBeNull();
    // Lost by something other than retention: the job ended after the retention mark.
    const lost = await db.pool.query(
      `DELETE FROM event_outbox WHERE type = 'dev.quire.transcription.completed' AND data->>'jobId' = $1
       RETURNING workspace_id, type, subject, data, created_at`,
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
    const back = lost.rows[0];
    await db.pool.query(
      `INSERT INTO event_outbox (workspace_id, type, subject, data, created_at) VALUES ($1, $2, $3, $4, $5)`,
      [back.workspace_id, back.type, back.subject, back.data, back.created_at],
    );
    await db.pool.query(`UPDATE transcription_jobs SET ended_at = now() WHERE id = $1`, [row.job]);
    expect(await auditInvariants(db.pool)).toEqual([]);
  });

  it('D11 partitions exist ahead of time for every table, the webhook tables month for month alike, and a row far in the past lands in the partition covering it', async () => {
    const added = await ensureTimePartitions(db.pool, new Date());
    for (const table of TIME_PARTITIONED_TABLES) {
      const partitions = await listTimePartitions(db.pool, table);
      // The first reaches back to all time; the last ends MONTHS_AHEAD months after this one.
      expect(partitions[0]!.from).toBeNull();
      expect(partitions.at(-1)!.to.getTime()).toBe(later(MONTHS_AHEAD + 1).getTime());
      for (const [i, p] of partitions.entries()) {
        if (i > 0) expect(p.from!.getTime()).toBe(partitions[i - 1]!.to.getTime());
      }
    }
    const bounds = async (t: TimePartitionedTable) =>
      (await listTimePartitions(db.pool, t)).map((p) => p.to.getTime());
    expect(await bounds('webhook_deliveries')).toEqual(await bounds('event_outbox'));
    expect(await bounds('webhook_delivery_attempts')).toEqual(await bounds('event_outbox'));
    expect(added.length % TIME_PARTITIONED_TABLES.length).toBe(0);
    // A second pass finds nothing to add.
    expect(await ensureTimePartitions(db.pool, new Date())).toEqual([]);

    const ancient = await eventAt(workspaceId, new Date('2001-02-03T04:05:06Z'));
    expect(await partitionOf('event_outbox', 'id = $1', [ancient])).toBe('event_outbox_history');
    const ahead = await eventAt(workspaceId, later(2, 3));
    expect(await partitionOf('event_outbox', 'id = $1', [ahead])).toBe(
      monthName('event_outbox', later(2)),
    );
    await db.pool.query('DELETE FROM event_outbox WHERE id = ANY ($1)', [[ancient, ahead]]);
  });

  it('O3 E1 D11 retention drops a month of events once all of it is past the period, keeps the months still within it, and the auditor still finds nothing', async () => {
    await ensureTimePartitions(db.pool, retentionDay);
    const old = await completedJob('old');
    const recent = await completedJob('recent');
    await moveTo(old, later(3, 10));
    await moveTo(recent, later(5, 1));
    // The relay has fanned every event out: nothing holds them back.
    await fanOutEvents(db.pool);
    expect(await auditInvariants(db.pool)).toEqual([]);
    const rowsBefore = (await db.pool.query('SELECT count(*)::int AS n FROM event_outbox')).rows[0]
      .n;

    const purged = await purgeOldEvents(db.pool, 30, retentionDay);
    expect(purged.droppedMonths).toBeGreaterThanOrEqual(1);
    expect(purged.heldMonths).toBe(0);
    expect(await completionEvents(old)).toBe(0);
    expect(await completionEvents(recent)).toBe(1);
    // Whole partitions went: month 3's for all three webhook tables; month 5's stays.
    for (const table of [
      'event_outbox',
      'webhook_deliveries',
      'webhook_delivery_attempts',
    ] as const) {
      const names = await partitionNames(table);
      expect(names).not.toContain(monthName(table, later(3)));
      expect(names).toContain(monthName(table, later(5)));
    }
    const rowsAfter = (await db.pool.query('SELECT count(*)::int AS n FROM event_outbox')).rows[0]
      .n;
    expect(rowsAfter).toBeLessThan(rowsBefore);
    expect(await auditInvariants(db.pool)).toEqual([]);
    // The mark is the end of the newest month dropped, which the period has passed.
    const mark = await eventsPurgedBefore(db.pool);
    expect(mark!.getTime()).toBe(later(5).getTime());
    expect(mark!.getTime()).toBeLessThanOrEqual(retentionDay.getTime() - 30 * DAY);

    // A longer retention later drops nothing and never moves the mark back.
    expect((await purgeOldEvents(db.pool, 90, retentionDay)).droppedMonths).toBe(0);
    expect((await eventsPurgedBefore(db.pool))!.getTime()).toBe(mark!.getTime());
  });

  it('D11 a month past retention is held while an event of it is not fanned out or one of its deliveries is pending, and a reader following positions reads on across the drop', async () => {
    await ensureTimePartitions(db.pool, later(9));
    const ws = await createWebhookWorkspace(db.pool, 'held');
    await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: 'https://hooks.example.com/held',
      secret: uniqueSecret(),
    });
    const day = later(9, 5);
    const month = later(7);
    const before = await eventAt(ws, later(8, 2));
    const cursor = (await readEventsAfter(db.pool, ws, 0, 100)).at(-1)!.position;
    const old = await eventAt(ws, later(7, 4));
    const recentEvent = await eventAt(ws, later(8, 20));
    // Stamped but not yet fanned out by the relay: the month stays.
    expect((await purgeOldEvents(db.pool, 30, day)).heldMonths).toBeGreaterThanOrEqual(1);
    expect(await partitionNames('event_outbox')).toContain(monthName('event_outbox', month));

    // Fanned out, but its delivery is pending: the month stays, the delivery with it.
    await fanOutEvents(db.pool);
    expect(await partitionOf('webhook_deliveries', 'event_id = $1', [old])).toBe(
      monthName('webhook_deliveries', month),
    );
    expect((await purgeOldEvents(db.pool, 30, day)).heldMonths).toBeGreaterThanOrEqual(1);
    expect(await partitionNames('webhook_deliveries')).toContain(
      monthName('webhook_deliveries', month),
    );

    // Delivered (with its attempt logged in the same month): the month goes, all three tables.
    const { rows: deliveries } = await db.pool.query(
      'SELECT id FROM webhook_deliveries WHERE event_id = $1',
      [old],
    );
    await recordDeliveryAttempt(db.pool, deliveries[0].id, {
      ok: true,
      statusCode: 200,
      latencyMs: 5,
    });
    expect(
      await partitionOf('webhook_delivery_attempts', 'delivery_id = $1', [deliveries[0].id]),
    ).toBe(monthName('webhook_delivery_attempts', month));
    const dropped = await purgeOldEvents(db.pool, 30, day);
    expect(dropped.heldMonths).toBe(0);
    for (const table of [
      'event_outbox',
      'webhook_deliveries',
      'webhook_delivery_attempts',
    ] as const)
      expect(await partitionNames(table)).not.toContain(monthName(table, month));

    // The month after (the current month itself went with the simulated half-year), written
    // before the drop and after it: a reader resuming from its
    // cursor (S1, Last-Event-ID) gets them all in order, and the relay fans out the new one.
    const afterDrop = await eventAt(ws, later(8, 25));
    const resumed = (await readEventsAfter(db.pool, ws, cursor, 100)).map((e) => e.id);
    expect(resumed).toEqual([recentEvent, afterDrop]);
    expect((await readAllEventsAfter(db.pool, cursor, 100)).map((e) => e.id)).toEqual(
      expect.arrayContaining([recentEvent, afterDrop]),
    );
    const fanned = await fanOutEvents(db.pool);
    expect(fanned.events).toBe(1);
    expect(fanned.deliveries).toBe(1);
    expect(before).toBeLessThan(old);
  });

  it('D11 a pass that cannot lock the tables within its timeout gives the month up, and the next pass drops it', async () => {
    await ensureTimePartitions(db.pool, later(12));
    const month = later(10);
    await eventAt(workspaceId, later(10, 6));
    await fanOutEvents(db.pool);
    const reader = await db.pool.connect();
    try {
      // A long read of the outbox holds its lock to its transaction's end.
      await reader.query('BEGIN');
      await reader.query('SELECT count(*) FROM event_outbox');
      const started = Date.now();
      const busy = await purgeOldEvents(db.pool, 30, later(12, 5));
      expect(busy.busyMonths).toBeGreaterThanOrEqual(1);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(await partitionNames('event_outbox')).toContain(monthName('event_outbox', month));
      // The pass gave up rather than fail the reader: its transaction reads on.
      expect(
        (await reader.query('SELECT count(*)::int AS n FROM event_outbox')).rows[0].n,
      ).toBeGreaterThan(0);
      await reader.query('COMMIT');
    } finally {
      reader.release();
    }
    await purgeOldEvents(db.pool, 30, later(12, 5));
    expect(await partitionNames('event_outbox')).not.toContain(monthName('event_outbox', month));
  });

  it('D11 months of the provider-call ledger past their retention are dropped whole, today stays', async () => {
    await ensureTimePartitions(db.pool, later(9));
    const call = (at: Date) =>
      db.pool.query(
        `INSERT INTO provider_calls (workspace_id, provider, operation, unit, outcome, occurred_at)
         VALUES ($1, 'simulated', 'recognize', 'call', 'ok', $2) RETURNING id`,
        [workspaceId, at],
      );
    await call(later(7, 3));
    await call(later(9, 1));
    expect(await partitionOf('provider_calls', 'occurred_at = $1', [later(7, 3)])).toBe(
      monthName('provider_calls', later(7)),
    );
    const purged = await purgeOldProviderCalls(db.pool, 20, later(9, 2));
    expect(purged.droppedMonths).toBeGreaterThanOrEqual(1);
    const names = await partitionNames('provider_calls');
    expect(names).not.toContain(monthName('provider_calls', later(7)));
    expect(names).toContain(monthName('provider_calls', later(9)));
    const left = await db.pool.query(
      'SELECT occurred_at FROM provider_calls WHERE occurred_at >= $1',
      [later(7)],
    );
    expect(left.rows.map((r) => r.occurred_at.getTime())).toEqual([later(9, 1).getTime()]);
  });
});
