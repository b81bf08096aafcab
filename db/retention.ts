import type { Queryable } from './pool';

/**
 * O3 retention: finished webhook deliveries (with their attempt logs) and then events
 * older than the retention period, that no pending delivery still needs, are removed.
 * Pending deliveries keep their events however old: nothing committed is dropped unsent.
 */
export async function purgeOldEvents(
  db: Queryable,
  retentionDays: number,
  now = new Date(),
): Promise<{ deliveries: number; events: number }> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  const deliveries = await db.query(
    `DELETE FROM webhook_deliveries WHERE status IN ('succeeded', 'failed', 'dead') AND updated_at < $1`,
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
