import {
  validateEventTypes,
  validateWebhookSecret,
  validateWebhookUrl,
} from '@quire/core/webhookValidation';
import { createSubscription, listSubscriptions } from '@quire/db/webhooks';
import { parseAllowHosts, resolveTarget, SsrfError } from '@quire/net/ssrf';
import { ApiError, json, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { createWebhookBody } from '@quire/web/lib/schemas';
import { config, pool } from '@quire/web/lib/server';
import { subscriptionJson } from '@quire/web/lib/webhooks';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string };

/**
 * POST /api/v1/workspaces/{ws}/webhooks (W1): the URL's shape, then where its host resolves
 * (no private, loopback or link-local target unless QUIRE_WEBHOOK_ALLOW_HOSTS admits it), then
 * the secret and the limit of 100, sealed at rest. The secret is never returned or logged.
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal) => {
    const body = await readJson(request, createWebhookBody, 16 * 1024);
    const url = validateWebhookUrl(body.url);
    // Every shape check before the DNS lookup: cheap errors first, and nothing resolved in vain.
    validateWebhookSecret(body.secret);
    validateEventTypes(body.eventTypes);
    try {
      await resolveTarget(url, {
        allowHosts: parseAllowHosts(process.env.QUIRE_WEBHOOK_ALLOW_HOSTS),
      });
    } catch (error) {
      if (error instanceof SsrfError)
        throw new ApiError(422, 'forbidden_target', `url ${error.message}`);
      throw error;
    }
    const subscription = await createSubscription(pool(), config().QUIRE_SECRET_KEY, {
      workspaceId: principal.workspaceId,
      url: body.url,
      secret: body.secret,
      eventTypes: body.eventTypes ?? null,
    });
    return json(subscriptionJson(subscription), {
      status: 201,
      headers: { Location: `${new URL(request.url).pathname}/${subscription.id}` },
    });
  });
}

/** GET /api/v1/workspaces/{ws}/webhooks: this workspace's subscriptions (at most 100). */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal) => {
    const subscriptions = await listSubscriptions(pool(), principal.workspaceId);
    return json({ webhooks: subscriptions.map(subscriptionJson) });
  });
}
