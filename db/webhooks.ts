import { DEFAULT_RETRY_SCHEDULE, nextAttemptAt, type RetrySchedule } from '../core/webhookSchedule';
import { type DeliveryStatus, isGivenUpDelivery } from '../core/webhookStatus';
import { sequenceEvents } from './events';
import { afterCommit, type Pool, type Queryable, wakeListeners, withTransaction } from './pool';
import { GIVEN_UP_DELIVERY_LIST } from './sql';
import { DeliveryStateError, getSubscription, WebhookNotFoundError } from './webhookSubscriptions';

export {
  type CreateSubscriptionInput,
  createSubscription,
  DeliveryStateError,
  DuplicateWebhookError,
  deleteSubscription,
  getSubscription,
  listSubscriptions,
  WebhookNotFoundError,
  type WebhookSubscription,
} from './webhookSubscriptions';

/**
 * W2: webhook deliveries: the fan-out of outbox events to subscriptions, each attempt's
 * outcome and retry, and the delivery log with its replay. Every read and write that an API
 * caller can reach is scoped by workspace. The subscriptions themselves (W1) are
 * webhookSubscriptions.ts, re-exported here for the routes and the relay.
 */

export const DEFAULT_RELAY_CURSOR = 'webhooks';

export interface FanOutResult {
  /** The cursor after this batch. */
  cursor: number;
  events: number;
  deliveries: number;
}

/**
 * W2: turns outbox events after the relay cursor into delivery rows for the active, matching
 * subscriptions of each event's own workspace, and advances the cursor, in one transaction.
 * A crash before commit leaves both untouched; after commit the deliveries are durable rows
 * that any relay will send. Idempotent per (subscription, event). The cursor is an outbox
 * position (D10): what is committed is stamped first, in its own transaction, so an event
 * whose transaction committed late is fanned out on a later pass, never skipped.
 */
export async function fanOutEvents(
  pool: Pool,
  options: { cursorName?: string; batchSize?: number } = {},
): Promise<FanOutResult> {
  const name = options.cursorName ?? DEFAULT_RELAY_CURSOR;
  const batchSize = options.batchSize ?? 500;
  await sequenceEvents(pool);
  return withTransaction(pool, async (client) => {
    await client.query(
      'INSERT INTO relay_cursors (name) VALUES ($1) ON CONFLICT (name) DO NOTHING',
      [name],
    );
    // The row lock serialises relays: two never fan out the same batch at once.
    const { rows: cursorRows } = await client.query<{ last_event_id: number }>(
      'SELECT last_event_id FROM relay_cursors WHERE name = $1 FOR UPDATE',
      [name],
    );
    const after = cursorRows[0]?.last_event_id ?? 0;
    const { rows } = await client.query<{
      last_id: number | null;
      events: number;
      deliveries: number;
    }>(
      `WITH ev AS (
         SELECT id, created_at, position, workspace_id, type FROM event_outbox
          WHERE position > $1 ORDER BY position LIMIT $2
       ), ins AS (
         INSERT INTO webhook_deliveries (subscription_id, workspace_id, event_id, event_created_at,
                                         next_attempt_at, retry_origin_at)
         SELECT s.id, ev.workspace_id, ev.id, ev.created_at, now(), now()
           FROM ev JOIN webhook_subscriptions s ON s.workspace_id = ev.workspace_id
          WHERE s.disabled_at IS NULL AND s.after_event_id < ev.position
            AND (s.event_types IS NULL OR ev.type = ANY (s.event_types))
         ORDER BY ev.position, s.id
         ON CONFLICT (subscription_id, event_id, event_created_at) DO NOTHING
         RETURNING 1
       )
       SELECT (SELECT max(position) FROM ev) AS last_id,
              (SELECT count(*)::int FROM ev) AS events,
              (SELECT count(*)::int FROM ins) AS deliveries`,
      [after, batchSize],
    );
    const result = rows[0]!;
    const cursor = result.last_id ?? after;
    if (cursor !== after) {
      await client.query(
        'UPDATE relay_cursors SET last_event_id = $2, updated_at = now() WHERE name = $1',
        [name, cursor],
      );
    }
    return { cursor, events: result.events, deliveries: result.deliveries };
  });
}

export async function relayCursor(
  db: Queryable,
  cursorName: string = DEFAULT_RELAY_CURSOR,
): Promise<number> {
  const { rows } = await db.query<{ last_event_id: number }>(
    'SELECT last_event_id FROM relay_cursors WHERE name = $1',
    [cursorName],
  );
  return rows[0]?.last_event_id ?? 0;
}

export { type ClaimedDelivery, claimDueDeliveries } from './webhookClaims';

export interface AttemptResult {
  ok: boolean;
  statusCode?: number;
  latencyMs: number;
  retryAfterMs?: number;
  /** Already redacted by the sender. */
  error?: string;
}

export type AttemptOutcome = 'succeeded' | 'retrying' | 'dead' | 'disabled' | 'stale' | 'gone';

/**
 * Records one attempt (the visible log) and moves the delivery on: succeeded, scheduled again,
 * dead after the schedule's window, or, on 410, failed with its subscription disabled. Only a
 * `pending` delivery moves, so a late result from an expired lease never undoes a success.
 * `attemptNumber` is the claim's (db/webhookClaims.ts), which already counted the attempt; a
 * failure reported after a later claim took the delivery over only joins the log. Without
 * one, the result is of an unclaimed send and is counted here.
 */
export async function recordDeliveryAttempt(
  pool: Pool,
  deliveryId: number,
  result: AttemptResult,
  options: { schedule?: RetrySchedule; now?: Date; attemptNumber?: number } = {},
): Promise<{ outcome: AttemptOutcome; nextAttemptAt?: Date }> {
  const schedule = options.schedule ?? DEFAULT_RETRY_SCHEDULE;
  const now = options.now ?? new Date();
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{
      status: string;
      attempt_count: number;
      retry_origin_at: Date;
      subscription_id: string;
      /** As text: a JavaScript Date would drop its microseconds, and the key with them. */
      event_created_at: string;
    }>(
      `SELECT status, attempt_count, retry_origin_at, subscription_id,
              event_created_at::text AS event_created_at
         FROM webhook_deliveries WHERE id = $1 FOR UPDATE`,
      [deliveryId],
    );
    const delivery = rows[0];
    // Deleted with its subscription while the request was in flight.
    if (!delivery) return { outcome: 'gone' as const };
    await client.query(
      `INSERT INTO webhook_delivery_attempts (delivery_id, attempted_at, status_code, latency_ms, error,
                                              event_created_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        deliveryId,
        now,
        result.statusCode ?? null,
        Math.round(result.latencyMs),
        result.error ?? null,
        delivery.event_created_at,
      ],
    );
    if (delivery.status !== 'pending') return { outcome: 'stale' as const };
    const claimed = options.attemptNumber !== undefined;
    if (claimed && delivery.attempt_count !== options.attemptNumber && !result.ok) {
      return { outcome: 'stale' as const };
    }
    const attempts = claimed ? delivery.attempt_count : delivery.attempt_count + 1;
    const update = (status: string, next: Date | null, error: string | null) =>
      client.query(
        `UPDATE webhook_deliveries
            SET status = $2, attempt_count = $3, next_attempt_at = coalesce($4, next_attempt_at),
                last_status_code = $5, last_error = $6, claimed_at = NULL, updated_at = now()
          WHERE id = $1`,
        [deliveryId, status, attempts, next, result.statusCode ?? null, error],
      );
    if (result.ok) {
      await update('succeeded', null, null);
      return { outcome: 'succeeded' as const };
    }
    if (result.statusCode === 410) {
      await update('failed', null, result.error ?? 'receiver answered 410');
      await client.query(
        `UPDATE webhook_subscriptions SET disabled_at = now(), disabled_reason = 'receiver answered 410 Gone'
          WHERE id = $1 AND disabled_at IS NULL`,
        [delivery.subscription_id],
      );
      // The receiver said it is gone for good: nothing else of this subscription is sent.
      await client.query(
        `UPDATE webhook_deliveries SET status = 'failed', last_error = 'subscription disabled (410)',
                claimed_at = NULL, updated_at = now()
          WHERE subscription_id = $1 AND status = 'pending'`,
        [delivery.subscription_id],
      );
      return { outcome: 'disabled' as const };
    }
    const next = nextAttemptAt(
      attempts,
      delivery.retry_origin_at,
      now,
      result.retryAfterMs,
      schedule,
    );
    if (next === 'dead') {
      await update('dead', null, result.error ?? null);
      return { outcome: 'dead' as const };
    }
    await update('pending', next, result.error ?? null);
    return { outcome: 'retrying' as const, nextAttemptAt: next };
  });
}

/** When the next pending delivery falls due, so the relay can sleep until then. */
/**
 * Milliseconds until the next delivery a relay could claim (negative when one is due now), by
 * the database's clock as the claim reads it, or null when none is pending. The predicate is
 * the claim's own (db/webhookClaims.ts): a pending row of a disabled subscription would
 * otherwise read as due forever and keep a relay re-polling every few milliseconds.
 */
export async function nextDueInMs(db: Queryable): Promise<number | null> {
  const { rows } = await db.query<{ due_in_ms: number | null }>(
    `SELECT (extract(epoch FROM min(d.next_attempt_at) - now()) * 1000)::float8 AS due_in_ms
       FROM webhook_deliveries d
       JOIN webhook_subscriptions s ON s.id = d.subscription_id
      WHERE d.status = 'pending' AND s.disabled_at IS NULL`,
  );
  return rows[0]?.due_in_ms ?? null;
}

/**
 * Whether the outbox holds an event past the position `cursor`, or one not yet stamped (D10):
 * two index probes, so an idle relay that
 * remembers the cursor it last saw skips the fan-out transaction (and its row lock) entirely.
 * Cursors only move forward, so nothing past the remembered one means nothing to fan out.
 */
export async function outboxHasEventsAfter(db: Queryable, cursor: number): Promise<boolean> {
  const { rows } = await db.query<{ more: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM event_outbox WHERE position > $1)
         OR EXISTS (SELECT 1 FROM event_outbox WHERE position IS NULL) AS more`,
    [cursor],
  );
  return rows[0]?.more === true;
}

export interface DeliveryAttemptView {
  attemptedAt: Date;
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
}

export interface DeliveryView {
  id: number;
  subscriptionId: string;
  eventId: number;
  eventType: string;
  status: DeliveryStatus;
  attemptCount: number;
  nextAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
  attempts: DeliveryAttemptView[];
}

interface DeliveryRow {
  id: number;
  subscription_id: string;
  event_id: number;
  type: string;
  status: DeliveryView['status'];
  attempt_count: number;
  next_attempt_at: Date;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

async function attachAttempts(db: Queryable, rows: DeliveryRow[]): Promise<DeliveryView[]> {
  const ids = rows.map((r) => r.id);
  const byDelivery = new Map<number, DeliveryAttemptView[]>();
  if (ids.length > 0) {
    const { rows: attempts } = await db.query<{
      delivery_id: number;
      attempted_at: Date;
      status_code: number | null;
      latency_ms: number | null;
      error: string | null;
    }>(
      `SELECT delivery_id, attempted_at, status_code, latency_ms, error FROM webhook_delivery_attempts
        WHERE delivery_id = ANY ($1::bigint[]) ORDER BY delivery_id, id`,
      [ids],
    );
    for (const a of attempts) {
      const list = byDelivery.get(a.delivery_id) ?? [];
      list.push({
        attemptedAt: a.attempted_at,
        statusCode: a.status_code,
        latencyMs: a.latency_ms,
        error: a.error,
      });
      byDelivery.set(a.delivery_id, list);
    }
  }
  return rows.map((r) => ({
    id: r.id,
    subscriptionId: r.subscription_id,
    eventId: r.event_id,
    eventType: r.type,
    status: r.status,
    attemptCount: r.attempt_count,
    nextAttemptAt: r.status === 'pending' ? r.next_attempt_at : null,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    attempts: byDelivery.get(r.id) ?? [],
  }));
}

const DELIVERY_COLUMNS = `d.id, d.subscription_id, d.event_id, e.type, d.status, d.attempt_count, d.next_attempt_at,
  d.last_status_code, d.last_error, d.created_at, d.updated_at`;

/**
 * W2 delivery log of one subscription, newest first, each with its attempts oldest first.
 * Throws `WebhookNotFoundError` when the workspace has no such subscription.
 */
export async function listDeliveries(
  db: Queryable,
  workspaceId: number,
  subscriptionId: string,
  options: { limit?: number; beforeId?: number; status?: DeliveryView['status'] } = {},
): Promise<DeliveryView[]> {
  const subscription = await getSubscription(db, workspaceId, subscriptionId);
  if (!subscription) throw new WebhookNotFoundError('webhook_not_found', 'webhook not found');
  const limit = Math.min(Math.max(options.limit ?? 50, 1), 100);
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS}
       FROM webhook_deliveries d JOIN event_outbox e ON e.id = d.event_id AND e.created_at = d.event_created_at
      WHERE d.workspace_id = $1 AND d.subscription_id = $2
        AND ($3::bigint IS NULL OR d.id < $3) AND ($4::text IS NULL OR d.status = $4)
      ORDER BY d.id DESC LIMIT $5`,
    [workspaceId, subscriptionId, options.beforeId ?? null, options.status ?? null, limit],
  );
  return attachAttempts(db, rows);
}

export async function getDelivery(
  db: Queryable,
  workspaceId: number,
  deliveryId: number,
): Promise<DeliveryView | undefined> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS}
       FROM webhook_deliveries d JOIN event_outbox e ON e.id = d.event_id AND e.created_at = d.event_created_at
      WHERE d.workspace_id = $1 AND d.id = $2`,
    [workspaceId, deliveryId],
  );
  const views = await attachAttempts(db, rows);
  return views[0];
}

/**
 * W2 admin replay: a `failed` or `dead` delivery goes back to `pending`, due now, with a fresh
 * retry schedule. Its earlier attempts stay in the log.
 */
export async function replayDelivery(
  pool: Pool,
  workspaceId: number,
  deliveryId: number,
): Promise<DeliveryView> {
  await withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ status: string; disabled_at: Date | null }>(
      `SELECT d.status, s.disabled_at FROM webhook_deliveries d
         JOIN webhook_subscriptions s ON s.id = d.subscription_id
        WHERE d.workspace_id = $1 AND d.id = $2 FOR UPDATE OF d`,
      [workspaceId, deliveryId],
    );
    const row = rows[0];
    if (!row) throw new WebhookNotFoundError('delivery_not_found', 'delivery not found');
    if (!isGivenUpDelivery(row.status)) {
      throw new DeliveryStateError(
        'delivery_not_replayable',
        `a ${row.status} delivery cannot be replayed`,
      );
    }
    if (row.disabled_at !== null) {
      throw new DeliveryStateError('subscription_disabled', 'the subscription is disabled');
    }
    const updated = await client.query(
      `UPDATE webhook_deliveries
          SET status = 'pending', attempt_count = 0, next_attempt_at = now(), retry_origin_at = now(),
              claimed_at = NULL, updated_at = now()
        WHERE id = $1 AND workspace_id = $2 AND status IN ${GIVEN_UP_DELIVERY_LIST}`,
      [deliveryId, workspaceId],
    );
    if (updated.rowCount !== 1) throw new Error('delivery changed while locked');
    // Wakes the relays once committed rather than at their next poll (D10: no NOTIFY inside
    // a transaction).
    afterCommit(client, wakeDeliveryRelays);
  });
  const view = await getDelivery(pool, workspaceId, deliveryId);
  if (!view) throw new WebhookNotFoundError('delivery_not_found', 'delivery not found');
  return view;
}

/** Wakes the webhook relays (`quire_webhook_deliveries`): a delivery is due again. */
function wakeDeliveryRelays(pool: Pool): void {
  wakeListeners(pool, `SELECT pg_notify('quire_webhook_deliveries', '')`);
}
