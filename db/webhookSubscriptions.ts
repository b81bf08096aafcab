import { DomainError } from '../core/errors';
import { uuidv7 } from '../core/ids';
import { sealSecret } from '../core/secretBox';
import {
  assertSubscriptionCapacity,
  validateEventTypes,
  validateWebhookSecret,
  validateWebhookUrl,
} from '../core/webhookValidation';
import { type AuditActor, recordAudit } from './auditLog';
import { sequenceEvents } from './events';
import { type Pool, type Queryable, withTransaction } from './pool';

/**
 * W1: a workspace's webhook subscriptions, and the errors the webhook repositories answer
 * with. Secrets are sealed with the process secret (bound to the subscription id) and never
 * leave the repositories except to the relay, which needs the clear secret to sign. Scoped by
 * workspace, like every read and write an API caller can reach.
 */
export class WebhookNotFoundError extends DomainError {
  override name = 'WebhookNotFoundError';
  constructor(
    override readonly code: 'webhook_not_found' | 'delivery_not_found' | 'workspace_not_found',
    message?: string,
  ) {
    super(code, message);
  }
}

export class DeliveryStateError extends DomainError {
  override name = 'DeliveryStateError';
  constructor(
    override readonly code: 'delivery_not_replayable' | 'subscription_disabled',
    message?: string,
  ) {
    super(code, message);
  }
}

/** W1: the workspace already has a subscription for this URL (disabled ones included). */
export class DuplicateWebhookError extends DomainError {
  override name = 'DuplicateWebhookError';
  constructor() {
    super(
      'webhook_url_exists',
      'this workspace already has a webhook for that url; delete it first to register it again',
    );
  }
}

/** What the API may show of a subscription: never the secret. */
export interface WebhookSubscription {
  id: string;
  workspaceId: number;
  url: string;
  eventTypes: string[] | null;
  createdAt: Date;
  disabledAt: Date | null;
  disabledReason: string | null;
}

interface SubscriptionRow {
  id: string;
  workspace_id: number;
  url: string;
  event_types: string[] | null;
  created_at: Date;
  disabled_at: Date | null;
  disabled_reason: string | null;
}

const SUBSCRIPTION_COLUMNS =
  'id, workspace_id, url, event_types, created_at, disabled_at, disabled_reason';

function toSubscription(r: SubscriptionRow): WebhookSubscription {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    url: r.url,
    eventTypes: r.event_types,
    createdAt: r.created_at,
    disabledAt: r.disabled_at,
    disabledReason: r.disabled_reason,
  };
}

export interface CreateSubscriptionInput {
  workspaceId: number;
  url: string;
  secret: string;
  eventTypes?: string[] | null;
  /** R10: who creates it; recorded in the audit log in the same transaction. */
  actor?: AuditActor;
}

/**
 * W1: validates shape (the DNS/SSRF check is the caller's, in net/ssrf.ts, before this), then
 * in one transaction locks the workspace, enforces the limit of 100, refuses a URL the
 * workspace has already registered (`webhook_url_exists`, 409) and inserts. The new
 * subscription receives events committed after it (from the outbox position stamped last).
 */
export async function createSubscription(
  pool: Pool,
  secretKey: string,
  input: CreateSubscriptionInput,
): Promise<WebhookSubscription> {
  const url = validateWebhookUrl(input.url);
  const secret = validateWebhookSecret(input.secret);
  const eventTypes = validateEventTypes(input.eventTypes);
  const id = uuidv7();
  const sealed = sealSecret(secretKey, secret, id);
  // D10: what is committed now gets its position first, so the subscription starts after
  // it; an event committing while it is created may still reach it (at-least-once).
  await sequenceEvents(pool);
  return withTransaction(pool, async (client) => {
    const workspace = await client.query('SELECT id FROM workspaces WHERE id = $1 FOR UPDATE', [
      input.workspaceId,
    ]);
    if (workspace.rowCount === 0) {
      throw new WebhookNotFoundError('workspace_not_found', 'workspace not found');
    }
    const { rows: counted } = await client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_subscriptions WHERE workspace_id = $1',
      [input.workspaceId],
    );
    assertSubscriptionCapacity(counted[0]?.n ?? 0);
    // Under the workspace lock above, so two creations of one URL cannot both pass. URLs are
    // compared as the parser writes them (host case, default port and empty path normalised).
    const taken = await client.query(
      'SELECT 1 FROM webhook_subscriptions WHERE workspace_id = $1 AND url = $2',
      [input.workspaceId, url.toString()],
    );
    if ((taken.rowCount ?? 0) > 0) throw new DuplicateWebhookError();
    const { rows } = await client.query<SubscriptionRow>(
      `INSERT INTO webhook_subscriptions (id, workspace_id, url, secret_ciphertext, event_types, after_event_id)
       VALUES ($1, $2, $3, $4, $5, (SELECT last_position FROM event_outbox_sequence))
       RETURNING ${SUBSCRIPTION_COLUMNS}`,
      [id, input.workspaceId, url.toString(), sealed, eventTypes],
    );
    const created = toSubscription(rows[0]!);
    if (input.actor) {
      // The URL and event types only: the secret never reaches the log.
      await recordAudit(client, input.actor, {
        action: 'webhook.create',
        target: `webhooks/${created.id}`,
        workspaceId: input.workspaceId,
        before: null,
        after: { url: created.url, eventTypes: created.eventTypes },
      });
    }
    return created;
  });
}

export async function listSubscriptions(
  db: Queryable,
  workspaceId: number,
): Promise<WebhookSubscription[]> {
  const { rows } = await db.query<SubscriptionRow>(
    `SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE workspace_id = $1 ORDER BY id`,
    [workspaceId],
  );
  return rows.map(toSubscription);
}

export async function getSubscription(
  db: Queryable,
  workspaceId: number,
  subscriptionId: string,
): Promise<WebhookSubscription | undefined> {
  const { rows } = await db.query<SubscriptionRow>(
    `SELECT ${SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, subscriptionId],
  );
  return rows[0] ? toSubscription(rows[0]) : undefined;
}

/**
 * W2: deletes a subscription's deliveries (and with them their attempts) first, then the
 * subscription, in one transaction. The row lock taken first makes a concurrent fan-out wait,
 * so no delivery can be added between the two deletes. False when the workspace has no such
 * subscription (the API answers 404).
 */
export async function deleteSubscription(
  pool: Pool,
  workspaceId: number,
  subscriptionId: string,
  /** R10: who deletes it; recorded in the audit log in the same transaction. */
  actor?: AuditActor,
): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    const found = await client.query<{ id: string; url: string }>(
      'SELECT id, url FROM webhook_subscriptions WHERE workspace_id = $1 AND id = $2 FOR UPDATE',
      [workspaceId, subscriptionId],
    );
    if (found.rowCount === 0) return false;
    await client.query('DELETE FROM webhook_deliveries WHERE subscription_id = $1', [
      subscriptionId,
    ]);
    const deleted = await client.query(
      'DELETE FROM webhook_subscriptions WHERE workspace_id = $1 AND id = $2',
      [workspaceId, subscriptionId],
    );
    if (deleted.rowCount !== 1) throw new Error('subscription vanished while locked');
    if (actor) {
      await recordAudit(client, actor, {
        action: 'webhook.delete',
        target: `webhooks/${subscriptionId}`,
        workspaceId,
        before: { url: found.rows[0]!.url },
        after: null,
      });
    }
    return true;
  });
}
