'use server';
import {
  validateEventTypes,
  validateWebhookSecret,
  validateWebhookUrl,
  WebhookValidationError,
} from '@quire/core/webhookValidation';
import {
  createSubscription,
  DeliveryStateError,
  deleteSubscription,
  replayDelivery,
  WebhookNotFoundError,
} from '@quire/db/webhooks';
import { parseAllowHosts, resolveTarget, SsrfError } from '@quire/net/ssrf';
import { config, pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import { refresh } from 'next/cache';
import { redirect } from 'next/navigation';

export interface CreateWebhookState {
  error: string | null;
  created: { id: string; url: string } | null;
}

/**
 * W1: the same checks as POST /webhooks: shape, then where the host resolves (SSRF guard),
 * then the secret and the limit. The secret is sealed at rest and never sent back: the
 * browser that typed or generated it is the only place it is shown.
 */
export async function createWebhookAction(
  _previous: CreateWebhookState,
  form: FormData,
): Promise<CreateWebhookState> {
  const principal = await requirePrincipal();
  const rawUrl = String(form.get('url') ?? '').trim();
  const secret = String(form.get('secret') ?? '');
  const eventTypes = form.getAll('eventTypes').map(String);
  try {
    const url = validateWebhookUrl(rawUrl);
    validateWebhookSecret(secret);
    validateEventTypes(eventTypes.length > 0 ? eventTypes : null);
    await resolveTarget(url, {
      allowHosts: parseAllowHosts(process.env.QUIRE_WEBHOOK_ALLOW_HOSTS),
    });
    const subscription = await createSubscription(pool(), config().QUIRE_SECRET_KEY, {
      workspaceId: principal.workspaceId,
      url: rawUrl,
      secret,
      eventTypes: eventTypes.length > 0 ? eventTypes : null,
    });
    refresh();
    return { error: null, created: { id: subscription.id, url: subscription.url } };
  } catch (error) {
    if (error instanceof WebhookValidationError) return { error: error.message, created: null };
    if (error instanceof SsrfError) return { error: `That URL ${error.message}.`, created: null };
    return { error: 'The webhook could not be created; try again.', created: null };
  }
}

export async function deleteWebhookAction(form: FormData): Promise<void> {
  const principal = await requirePrincipal();
  const id = String(form.get('webhookId') ?? '');
  await deleteSubscription(pool(), principal.workspaceId, id);
  redirect('/webhooks');
}

export interface ReplayState {
  error: string | null;
  done: string | null;
}

/** W2: an admin replay of a failed or dead delivery (its earlier attempts stay in the log). */
export async function replayDeliveryAction(
  _previous: ReplayState,
  form: FormData,
): Promise<ReplayState> {
  const principal = await requirePrincipal();
  const deliveryId = Number(form.get('deliveryId'));
  if (!Number.isSafeInteger(deliveryId)) return { error: 'The request was malformed.', done: null };
  try {
    await replayDelivery(pool(), principal.workspaceId, deliveryId);
  } catch (error) {
    if (error instanceof WebhookNotFoundError || error instanceof DeliveryStateError) {
      return { error: error.message, done: null };
    }
    return { error: 'The delivery could not be replayed; try again.', done: null };
  }
  refresh();
  return { error: null, done: 'Queued for delivery now.' };
}
