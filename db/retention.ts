import type { Queryable } from './pool';
import { ENDED_DELIVERY_LIST } from './sql';

/** The `retention_marks` row of the event outbox (see `eventsPurgedBefore`). */
export const EVENT_RETENTION_MARK = 'event_outbox';

/**
 * O3 retention: finished webhook deliveries (with their attempt logs) and then events
 * older than the retention period, that no pending delivery still needs, are removed.
 * Pending deliveries keep their events however old: nothing committed is dropped unsent.
 *
 * What it removes includes completion events, which the auditor otherwise expects one per
 * completed job (E1). So the cutoff is recorded first, as a mark that only moves forward: the
 * auditor reads it and no longer expects the event of a job that ended before it. Recorded
 * before the delete, so a pass that fails halfway leaves a mark that covers what it removed.
 */
export async function purgeOldEvents(
  db: Queryable,
  retentionDays: number,
  now = new Date(),
): Promise<{ deliveries: number; events: number }> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  await db.query(
    `INSERT INTO retention_marks (name, purged_before) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE
        SET purged_before = greatest(retention_marks.purged_before, EXCLUDED.purged_before), updated_at = now()`,
    [EVENT_RETENTION_MARK, cutoff],
  );
  const deliveries = await db.query(
    `DELETE FROM webhook_deliveries WHERE status IN ${ENDED_DELIVERY_LIST} AND updated_at < $1`,
    [cutoff],
  );
  const events = await db.query(
    // Only events the webhook relay has already fanned out: a relay that was down longer
    // than the retention period still finds every event it has not seen.
    `DELETE FROM event_outbox e WHERE e.created_at < $1
        AND e.id <= coalesce((SELECT min(last_event_id) FROM relay_cursors), 0)
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)`,
    [cutoff],
  );
  return { deliveries: deliveries.rowCount ?? 0, events: events.rowCount ?? 0 };
}

/** Events created before this time may have been removed by retention; null when none were. */
export async function eventsPurgedBefore(db: Queryable): Promise<Date | null> {
  const { rows } = await db.query<{ purged_before: Date }>(
    'SELECT purged_before FROM retention_marks WHERE name = $1',
    [EVENT_RETENTION_MARK],
  );
  return rows[0]?.purged_before ?? null;
}
