import { getSubscription } from '@quire/db/webhooks';
import { ApiError, json, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool } from '@quire/web/lib/server';
import { subscriptionJson } from '@quire/web/lib/webhooks';
import { deleteWebhook } from '@quire/web/services/webhooks';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; webhookId: string };

function checkId(id: string): string {
  if (id.length === 0 || id.length > 64)
    throw new ApiError('webhook_not_found', 'webhook not found');
  return id;
}

/** GET /api/v1/workspaces/{ws}/webhooks/{webhookId}: one subscription, without its secret. */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const subscription = await getSubscription(
      pool(),
      principal.workspaceId,
      checkId(params.webhookId),
    );
    if (!subscription) throw new ApiError('webhook_not_found', 'webhook not found');
    return json(subscriptionJson(subscription));
  });
}

/** DELETE /api/v1/workspaces/{ws}/webhooks/{webhookId} (W1): its deliveries first, then itself. */
export async function DELETE(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    await deleteWebhook(principal, params.webhookId);
    return new Response(null, { status: 204 });
  });
}
