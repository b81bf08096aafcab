import 'server-only';
import type { DeliveryView, WebhookSubscription } from '@quire/db/webhooks';

/** What the API shows of a subscription: never its secret (W1). */
export function subscriptionJson(s: WebhookSubscription) {
  return {
    id: s.id,
    url: s.url,
    eventTypes: s.eventTypes,
    createdAt: s.createdAt.toISOString(),
    disabledAt: s.disabledAt?.toISOString() ?? null,
    disabledReason: s.disabledReason,
  };
}

export function deliveryJson(d: DeliveryView) {
  return {
    id: d.id,
    subscriptionId: d.subscriptionId,
    eventId: d.eventId,
    eventType: d.eventType,
    status: d.status,
    attemptCount: d.attemptCount,
    nextAttemptAt: d.nextAttemptAt?.toISOString() ?? null,
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
    attempts: d.attempts.map((a) => ({
      attemptedAt: a.attemptedAt.toISOString(),
      statusCode: a.statusCode,
      latencyMs: a.latencyMs,
      error: a.error,
    })),
  };
}
