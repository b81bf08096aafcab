import { DEFAULT_RETRY_SCHEDULE, nextAttemptAt, type RetrySchedule } from '../core/webhookSchedule';
import type { OutboxEvent } from './events';
import { type Pool, withTransaction } from './pool';

/**
 * W2: claiming deliveries for a send. An attempt is counted when it is claimed, before the
 * send: a send that kills its relay (a receiver whose answer crashes it, an OOM, a SIGKILL)
 * has already spent its attempt, so the delivery moves along the retry schedule like any
 * failure and goes dead at the end of it, instead of being sent again every lease for ever.
 */

/** The attempt log's words for a send whose relay never reported back. */
export const LOST_SEND_ERROR = 'no result: the relay stopped during the send';

/** A delivery claimed for one send; holds the sealed secret, opened only by the sender. */
export interface ClaimedDelivery {
  deliveryId: number;
  subscriptionId: string;
  workspaceId: number;
  url: string;
  sealedSecret: Buffer;
  /** Attempts before this one. */
  attemptCount: number;
  /** This attempt's number, already counted: pass it to `recordDeliveryAttempt`. */
  attemptNumber: number;
  retryOriginAt: Date;
  /** The event as webhooks carry it: by its id (its stream position is not needed). */
  event: Omit<OutboxEvent, 'position'>;
}

interface DueRow {
  id: number;
  /** As text: a JavaScript Date would drop its microseconds, and the key with them. */
  event_created_at: string;
  attempt_count: number;
  retry_origin_at: Date;
  claimed_at: Date | null;
}

/**
 * Claims due deliveries with `FOR UPDATE SKIP LOCKED`, in one transaction that counts each
 * claimed attempt and marks it in flight (`claimed_at`). Its `next_attempt_at` becomes the
 * later of the lease's end and the time the schedule would retry after this attempt failing:
 * if the relay dies mid-send, the delivery comes back on schedule, at-least-once with the
 * same event id. A claim that finds `claimed_at` still set logs that earlier attempt as lost,
 * and when the schedule has no attempt left after it, the delivery is dead and not sent.
 */
export async function claimDueDeliveries(
  pool: Pool,
  options: { limit: number; leaseMs: number; schedule?: RetrySchedule; now?: Date },
): Promise<ClaimedDelivery[]> {
  if (options.limit <= 0) return [];
  const schedule = options.schedule ?? DEFAULT_RETRY_SCHEDULE;
  const now = options.now ?? new Date();
  return withTransaction(pool, async (client) => {
    const { rows: due } = await client.query<DueRow>(
      `SELECT d.id, d.event_created_at::text AS event_created_at, d.attempt_count, d.retry_origin_at, d.claimed_at
         FROM webhook_deliveries d
         JOIN webhook_subscriptions s ON s.id = d.subscription_id
        WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND s.disabled_at IS NULL
        ORDER BY d.next_attempt_at, d.id
        LIMIT $1
        FOR UPDATE OF d SKIP LOCKED`,
      [options.limit],
    );
    const ids: number[] = [];
    const attempts: number[] = [];
    const nextAts: Date[] = [];
    for (const row of due) {
      if (row.claimed_at !== null) {
        await client.query(
          `INSERT INTO webhook_delivery_attempts (delivery_id, event_created_at, attempted_at, error)
           VALUES ($1, $2, $3, $4)`,
          [row.id, row.event_created_at, row.claimed_at, LOST_SEND_ERROR],
        );
        const after = nextAttemptAt(
          row.attempt_count,
          row.retry_origin_at,
          row.claimed_at,
          undefined,
          schedule,
        );
        if (after === 'dead') {
          await client.query(
            `UPDATE webhook_deliveries SET status = 'dead', claimed_at = NULL, last_status_code = NULL,
                    last_error = $2, updated_at = now()
              WHERE id = $1`,
            [row.id, LOST_SEND_ERROR],
          );
          continue;
        }
      }
      const attempt = row.attempt_count + 1;
      const leaseEnd = now.getTime() + options.leaseMs;
      const onFailure = nextAttemptAt(attempt, row.retry_origin_at, now, undefined, schedule);
      ids.push(row.id);
      attempts.push(attempt);
      nextAts.push(
        new Date(onFailure === 'dead' ? leaseEnd : Math.max(leaseEnd, onFailure.getTime())),
      );
    }
    if (ids.length === 0) return [];
    const { rows } = await client.query<{
      id: number;
      subscription_id: string;
      workspace_id: number;
      url: string;
      secret_ciphertext: Buffer;
      attempt_count: number;
      retry_origin_at: Date;
      event_id: number;
      event_workspace_id: number | null;
      type: string;
      subject: string | null;
      data: Record<string, unknown>;
      event_created_at: Date;
    }>(
      `UPDATE webhook_deliveries d
          SET attempt_count = v.attempt, claimed_at = now(), next_attempt_at = v.next_at, updated_at = now()
         FROM unnest($1::bigint[], $2::int[], $3::timestamptz[]) AS v(id, attempt, next_at),
              webhook_subscriptions s, event_outbox e
        WHERE d.id = v.id AND s.id = d.subscription_id AND e.id = d.event_id AND e.created_at = d.event_created_at
          AND s.workspace_id = d.workspace_id AND e.workspace_id = d.workspace_id
       RETURNING d.id, d.subscription_id, d.workspace_id, s.url, s.secret_ciphertext, d.attempt_count,
                 d.retry_origin_at, e.id AS event_id, e.workspace_id AS event_workspace_id, e.type,
                 e.subject, e.data, e.created_at AS event_created_at`,
      [ids, attempts, nextAts],
    );
    return rows
      .sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id))
      .map((r) => ({
        deliveryId: r.id,
        subscriptionId: r.subscription_id,
        workspaceId: r.workspace_id,
        url: r.url,
        sealedSecret: r.secret_ciphertext,
        attemptCount: r.attempt_count - 1,
        attemptNumber: r.attempt_count,
        retryOriginAt: r.retry_origin_at,
        event: {
          id: r.event_id,
          workspaceId: r.event_workspace_id,
          type: r.type,
          subject: r.subject,
          data: r.data,
          createdAt: r.event_created_at,
        },
      }));
  });
}
