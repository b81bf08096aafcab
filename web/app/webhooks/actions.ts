'use server';
import { WebhookNotFoundError } from '@quire/db/webhooks';
import { refusalOf } from '@quire/web/lib/errors';
import { config } from '@quire/web/lib/server';
import { requireAct } from '@quire/web/lib/session';
import { createWebhook, deleteWebhook, replayDelivery } from '@quire/web/services/webhooks';
import { refresh } from 'next/cache';
import { redirect } from 'next/navigation';

export interface CreateWebhookState {
  error: string | null;
  created: { id: string; url: string } | null;
}

/**
 * W1, the console's form for web/services/webhooks.ts `createWebhook` (the same checks as
 * POST /webhooks). The secret is never sent back: the browser that typed or generated it is
 * the only place it is shown.
 */
export async function createWebhookAction(
  _previous: CreateWebhookState,
  form: FormData,
): Promise<CreateWebhookState> {
  const principal = await requireAct('webhook.create');
  const eventTypes = form.getAll('eventTypes').map(String);
  try {
    const subscription = await createWebhook(
      principal,
      {
        url: String(form.get('url') ?? '').trim(),
        secret: String(form.get('secret') ?? ''),
        eventTypes: eventTypes.length > 0 ? eventTypes : null,
      },
      config(),
    );
    refresh();
    return { error: null, created: { id: subscription.id, url: subscription.url } };
  } catch (error) {
    return {
      error: refusalOf(error, 'The webhook could not be created; try again.').message,
      created: null,
    };
  }
}

export async function deleteWebhookAction(form: FormData): Promise<void> {
  const principal = await requireAct('webhook.delete');
  try {
    await deleteWebhook(principal, String(form.get('webhookId') ?? ''));
  } catch (error) {
    // Already gone (another tab, the API): the list is where the user wanted to be anyway.
    if (!(error instanceof WebhookNotFoundError)) throw error;
  }
  redirect('/webhooks');
}

export interface ReplayState {
  error: string | null;
  done: string | null;
}

/** W2: an admin replay of a failed or dead delivery (web/services/webhooks.ts `replayDelivery`). */
export async function replayDeliveryAction(
  _previous: ReplayState,
  form: FormData,
): Promise<ReplayState> {
  const principal = await requireAct('webhook.replay');
  const deliveryId = Number(form.get('deliveryId'));
  if (!Number.isSafeInteger(deliveryId)) return { error: 'The request was malformed.', done: null };
  try {
    await replayDelivery(principal, { deliveryId });
  } catch (error) {
    return {
      error: refusalOf(error, 'The delivery could not be replayed; try again.').message,
      done: null,
    };
  }
  refresh();
  return { error: null, done: 'Queued for delivery now.' };
}
