import { json, pathId, type RouteContext, withApi } from '@quire/web/lib/api';
import { deliveryJson } from '@quire/web/lib/webhooks';
import { replayDelivery } from '@quire/web/services/webhooks';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; webhookId: string; deliveryId: string };

/**
 * POST /api/v1/workspaces/{ws}/webhooks/{webhookId}/deliveries/{deliveryId}/replay (W2): an
 * admin replay of a failed or dead delivery, due now with a fresh schedule, same event id.
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const replayed = await replayDelivery(principal, {
      deliveryId: pathId(params.deliveryId, 'deliveryId'),
      webhookId: params.webhookId,
    });
    return json(deliveryJson(replayed), { status: 202 });
  });
}
