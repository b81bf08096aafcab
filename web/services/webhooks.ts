import 'server-only';
import type { QuireConfig } from '@quire/core/config';
import {
  validateEventTypes,
  validateWebhookSecret,
  validateWebhookUrl,
} from '@quire/core/webhookValidation';
import {
  createSubscription,
  type DeliveryView,
  deleteSubscription,
  getDelivery,
  replayDelivery as replayDeliveryNow,
  WebhookNotFoundError,
  type WebhookSubscription,
} from '@quire/db/webhooks';
import type { Principal } from '@quire/db/workspaces';
import { assertWebhookTargetAllowed, parseAllowHosts } from '@quire/net/ssrf';
import { pool } from '@quire/web/lib/server';
import { actorOf, requireAction } from './access';

/**
 * W1/W2 for the API and the console alike: creating and deleting a subscription, replaying a
 * delivery. Refusals are typed (WebhookValidationError, WebhookNotFoundError,
 * DeliveryStateError); the caller words them.
 */

/**
 * W1: the URL's shape, the secret and the event types first (cheap, and nothing resolved in
 * vain), then where the host resolves: no private, loopback or link-local target unless
 * QUIRE_WEBHOOK_ALLOW_HOSTS admits it. The secret is sealed at rest and never returned.
 */
export async function createWebhook(
  principal: Principal,
  input: { url: string; secret: string; eventTypes: string[] | null },
  config: QuireConfig,
): Promise<WebhookSubscription> {
  requireAction(principal, 'webhook.create');
  // The cheap shape checks first, so a bad secret is refused without a DNS lookup.
  validateWebhookUrl(input.url);
  validateWebhookSecret(input.secret);
  validateEventTypes(input.eventTypes);
  await assertWebhookTargetAllowed(input.url, {
    allowHosts: parseAllowHosts(config.QUIRE_WEBHOOK_ALLOW_HOSTS),
  });
  return createSubscription(pool(), config.QUIRE_SECRET_KEY, {
    workspaceId: principal.workspaceId,
    url: input.url,
    secret: input.secret,
    eventTypes: input.eventTypes,
    actor: actorOf(principal),
  });
}

/** W1: a subscription goes with its deliveries. */
export async function deleteWebhook(principal: Principal, webhookId: string): Promise<void> {
  requireAction(principal, 'webhook.delete');
  const deleted =
    webhookId.length > 0 &&
    webhookId.length <= 64 &&
    (await deleteSubscription(pool(), principal.workspaceId, webhookId, actorOf(principal)));
  if (!deleted) throw new WebhookNotFoundError('webhook_not_found', 'webhook not found');
}

/**
 * W2: an admin replay of a failed or dead delivery, due now with a fresh schedule and the same
 * event id (its earlier attempts stay in the log). `webhookId`, when given, must be the
 * delivery's own subscription.
 */
export async function replayDelivery(
  principal: Principal,
  input: { deliveryId: number; webhookId?: string },
): Promise<DeliveryView> {
  requireAction(principal, 'webhook.replay');
  if (input.webhookId !== undefined) {
    const existing = await getDelivery(pool(), principal.workspaceId, input.deliveryId);
    if (!existing || existing.subscriptionId !== input.webhookId) {
      throw new WebhookNotFoundError('delivery_not_found', 'delivery not found');
    }
  }
  return replayDeliveryNow(pool(), principal.workspaceId, input.deliveryId);
}
