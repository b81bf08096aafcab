import { listSubscriptions } from '@quire/db/webhooks';
import { json, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { createWebhookBody } from '@quire/web/lib/schemas';
import { config, pool } from '@quire/web/lib/server';
import { subscriptionJson } from '@quire/web/lib/webhooks';
import { createWebhook } from '@quire/web/services/webhooks';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string };

/**
 * POST /api/v1/workspaces/{ws}/webhooks (W1, web/services/webhooks.ts `createWebhook`): 201
 * with the subscription, never its secret; a refused URL, secret or target is a 422.
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal) => {
    const body = await readJson(request, createWebhookBody, 16 * 1024);
    const subscription = await createWebhook(
      principal,
      { url: body.url, secret: body.secret, eventTypes: body.eventTypes ?? null },
      config(),
    );
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
