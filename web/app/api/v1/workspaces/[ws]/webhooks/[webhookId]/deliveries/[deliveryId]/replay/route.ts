import { getDelivery, replayDelivery } from '@quire/db/webhooks';
import { ApiError, json, pathId, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool } from '@quire/web/lib/server';
import { deliveryJson } from '@quire/web/lib/webhooks';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; webhookId: string; deliveryId: string };

/**
 * POST /api/v1/workspaces/{ws}/webhooks/{webhookId}/deliveries/{deliveryId}/replay (W2): an
 * admin replay of a failed or dead delivery, due now with a fresh schedule, same event id.
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const deliveryId = pathId(params.deliveryId, 'deliveryId');
    const existing = await getDelivery(pool(), principal.workspaceId, deliveryId);
    if (!existing || existing.subscriptionId !== params.webhookId) {
      throw new ApiError(404, 'delivery_not_found', 'delivery not found');
    }
    const replayed = await replayDelivery(pool(), principal.workspaceId, deliveryId);
    return json(deliveryJson(replayed), { status: 202 });
  });
}
