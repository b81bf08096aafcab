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
  batchRows = RETENTION_BATCH_ROWS,
): Promise<{ deliveries: number; events: number }> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  await db.query(
    `INSERT INTO retention_marks (name, purged_before) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE
        SET purged_before = greatest(retention_marks.purged_before, EXCLUDED.purged_before), updated_at = now()`,
    [EVENT_RETENTION_MARK, cutoff],
  );
  const deliveries = await deleteInBatches(
    db,
    `DELETE FROM webhook_deliveries WHERE id IN (
       SELECT id FROM webhook_deliveries WHERE status IN ${ENDED_DELIVERY_LIST} AND updated_at < $1
        LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [cutoff],
    batchRows,
  );
  const events = await deleteInBatches(
    db,
    // Only events the webhook relay has already fanned out (its cursor is a position, D10;
    // an event not yet stamped has none and stays): a relay that was down longer than the
    // retention period still finds every event it has not seen.
    `DELETE FROM event_outbox WHERE id IN (
       SELECT e.id FROM event_outbox e WHERE e.created_at < $1
          AND e.position <= coalesce((SELECT min(last_event_id) FROM relay_cursors), 0)
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
        ORDER BY e.id LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [cutoff],
    batchRows,
  );
  return { deliveries, events };
}

/** Rows a retention statement removes at once (D11): its locks and its WAL stay small. */
export const RETENTION_BATCH_ROWS = 5_000;

/**
 * D11: a retention DELETE run batch after batch, each its own statement (its own transaction
 * on a pool), until a batch removes fewer rows than it may: never one statement over a
 * table's whole past. The statement takes the batch size as its last parameter.
 */
async function deleteInBatches(
  db: Queryable,
  sql: string,
  values: unknown[],
  batchRows: number,
): Promise<number> {
  let removed = 0;
  for (;;) {
    const { rowCount } = await db.query(sql, [...values, batchRows]);
    removed += rowCount ?? 0;
    if ((rowCount ?? 0) < batchRows) return removed;
  }
}

/** Events created before this time may have been removed by retention; null when none were. */
export async function eventsPurgedBefore(db: Queryable): Promise<Date | null> {
  const { rows } = await db.query<{ purged_before: Date }>(
    'SELECT purged_before FROM retention_marks WHERE name = $1',
    [EVENT_RETENTION_MARK],
  );
  return rows[0]?.purged_before ?? null;
}
