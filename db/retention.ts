import {
  dropTimePartitions,
  listTimePartitions,
  PARTITION_LOCK_TIMEOUT,
  type TimePartition,
} from './partitions';
import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';

/** The `retention_marks` row of the event outbox (see `eventsPurgedBefore`). */
export const EVENT_RETENTION_MARK = 'event_outbox';

/**
 * O3 + D11 retention: whole months of events leave with their webhook deliveries and those
 * deliveries' attempts, by detaching and dropping their partitions (db/partitions.ts): no row
 * is deleted one by one. A month goes once all of it is older than the retention period, so
 * an event is kept at least `retentionDays` and at most a month longer.
 *
 * A month is held back, however old, while the webhook relay has not fanned out all of its
 * events (its cursor is a position, D10; an event not yet stamped has none) or while one of
 * its deliveries is still pending: nothing committed is dropped unsent, and a relay that was
 * down longer than the retention period still finds every event it has not seen. Readers that
 * follow positions (SSE resume, the relay) read only past their cursor, which a dropped month
 * lies wholly behind.
 *
 * What it removes includes completion events, which the auditor otherwise expects one per
 * completed job (E1). So the end of the dropped month is recorded as a mark that only moves
 * forward, in the same transaction as the drop: the auditor reads it and no longer expects the
 * event of a job that ended before it.
 */
export async function purgeOldEvents(
  pool: Pool,
  retentionDays: number,
  now = new Date(),
): Promise<EventPurge> {
  const cutoff = new Date(now.getTime() - retentionDays * DAY_MS);
  const events = await listTimePartitions(pool, 'event_outbox');
  const deliveries = await listTimePartitions(pool, 'webhook_deliveries');
  const attempts = await listTimePartitions(pool, 'webhook_delivery_attempts');
  const sameMonth = (list: TimePartition[], month: TimePartition) =>
    list.find((p) => p.to.getTime() === month.to.getTime());
  const purge: EventPurge = { droppedMonths: 0, heldMonths: 0, busyMonths: 0 };
  for (const month of events.filter((p) => p.to <= cutoff)) {
    const monthDeliveries = sameMonth(deliveries, month);
    const monthAttempts = sameMonth(attempts, month);
    try {
      const dropped = await withTransaction(pool, async (client) => {
        await client.query(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`);
        // The parents first, always in this order: nothing else takes more than a row lock on
        // them, so this pass waits at most the timeout and deadlocks with no one. Held to the
        // commit, so no delivery turns pending (a replay) between the check and the drop.
        await client.query(
          'LOCK TABLE webhook_delivery_attempts, webhook_deliveries, event_outbox IN ACCESS EXCLUSIVE MODE',
        );
        if (!(await monthIsDone(client, month.name, monthDeliveries?.name))) return false;
        await client.query(
          `INSERT INTO retention_marks (name, purged_before) VALUES ($1, $2)
           ON CONFLICT (name) DO UPDATE
              SET purged_before = greatest(retention_marks.purged_before, EXCLUDED.purged_before),
                  updated_at = now()`,
          [EVENT_RETENTION_MARK, month.to],
        );
        await dropTimePartitions(client, [
          ...(monthAttempts
            ? [{ parent: 'webhook_delivery_attempts' as const, name: monthAttempts.name }]
            : []),
          ...(monthDeliveries
            ? [{ parent: 'webhook_deliveries' as const, name: monthDeliveries.name }]
            : []),
          { parent: 'event_outbox', name: month.name },
        ]);
        return true;
      });
      if (dropped) purge.droppedMonths++;
      else purge.heldMonths++;
    } catch (error) {
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw error;
      purge.busyMonths++;
    }
  }
  return purge;
}

export interface EventPurge {
  /** Months of events dropped with their deliveries and attempts. */
  droppedMonths: number;
  /** Months past retention kept for an event not yet fanned out or a delivery still pending. */
  heldMonths: number;
  /** Months left for the next pass because a lock was not free within the timeout. */
  busyMonths: number;
}

/** Every event of the month stamped and fanned out, and none of its deliveries pending. */
async function monthIsDone(
  client: PoolClient,
  eventsPartition: string,
  deliveriesPartition: string | undefined,
): Promise<boolean> {
  const events = `"${eventsPartition.replace(/"/g, '""')}"`;
  const { rows } = await client.query<{ done: boolean }>(
    `SELECT NOT EXISTS (SELECT 1 FROM ${events} WHERE position IS NULL)
        AND NOT EXISTS (SELECT 1 FROM ${events}
                         WHERE position > coalesce((SELECT min(last_event_id) FROM relay_cursors), 0))
        AS done`,
  );
  if (!rows[0]!.done) return false;
  if (!deliveriesPartition) return true;
  const pending = await client.query(
    `SELECT 1 FROM "${deliveriesPartition.replace(/"/g, '""')}" WHERE status = 'pending' LIMIT 1`,
  );
  return pending.rowCount === 0;
}

/**
 * D11: months of the provider-call ledger older than `retentionDays` are dropped whole. The
 * ledger feeds the daily budgets (B1), so the setting's floor keeps today and yesterday.
 */
export async function purgeOldProviderCalls(
  pool: Pool,
  retentionDays: number,
  now = new Date(),
): Promise<{ droppedMonths: number; busyMonths: number }> {
  const cutoff = new Date(now.getTime() - retentionDays * DAY_MS);
  const result = { droppedMonths: 0, busyMonths: 0 };
  for (const month of await listTimePartitions(pool, 'provider_calls')) {
    if (month.to > cutoff) break;
    try {
      await withTransaction(pool, async (client) => {
        await client.query(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`);
        await dropTimePartitions(client, [{ parent: 'provider_calls', name: month.name }]);
      });
      result.droppedMonths++;
    } catch (error) {
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw error;
      result.busyMonths++;
    }
  }
  return result;
}

const DAY_MS = 86_400_000;
/** PostgreSQL's code for a lock not granted within `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';

/** Events created before this time may have been removed by retention; null when none were. */
export async function eventsPurgedBefore(db: Queryable): Promise<Date | null> {
  const { rows } = await db.query<{ purged_before: Date }>(
    'SELECT purged_before FROM retention_marks WHERE name = $1',
    [EVENT_RETENTION_MARK],
  );
  return rows[0]?.purged_before ?? null;
}
