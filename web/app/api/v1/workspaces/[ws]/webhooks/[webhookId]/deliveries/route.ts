import { decodePageToken, encodePageToken } from '@quire/core/pageToken';
import { listDeliveries } from '@quire/db/webhooks';
import { ApiError, json, type RouteContext, readQuery, withApi } from '@quire/web/lib/api';
import { deliveriesQuery } from '@quire/web/lib/schemas';
import { config, pool } from '@quire/web/lib/server';
import { deliveryJson } from '@quire/web/lib/webhooks';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; webhookId: string };

/**
 * GET /api/v1/workspaces/{ws}/webhooks/{webhookId}/deliveries (W2): the delivery log, newest
 * first, each delivery with its attempts (status, latency, redacted error). Keyset-paged with a
 * signed token bound to the workspace, subscription and filter.
 */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, { webhookId }) => {
    if (webhookId.length === 0 || webhookId.length > 64) {
      throw new ApiError('webhook_not_found', 'webhook not found');
    }
    const query = readQuery(request, deliveriesQuery);
    const binding = {
      workspaceId: principal.workspaceId,
      scope: 'webhook-deliveries',
      filter: { webhookId, status: query.status },
    };
    const secret = config().QUIRE_SECRET_KEY;
    let beforeId: number | undefined;
    if (query.pageToken !== undefined) {
      const cursor = decodePageToken(secret, binding, query.pageToken);
      if (typeof cursor !== 'number' || !Number.isSafeInteger(cursor) || cursor <= 0) {
        throw new ApiError('invalid_page_token', 'page token is malformed');
      }
      beforeId = cursor;
    }
    // listDeliveries caps at 100; one more than asked tells whether another page exists.
    const rows = await listDeliveries(pool(), principal.workspaceId, webhookId, {
      limit: Math.min(query.pageSize + 1, 100),
      beforeId,
      status: query.status,
    });
    const deliveries = rows.slice(0, query.pageSize);
    const last = deliveries[deliveries.length - 1];
    const more = rows.length > query.pageSize || (query.pageSize === 100 && rows.length === 100);
    return json({
      deliveries: deliveries.map(deliveryJson),
      nextPageToken: more && last ? encodePageToken(secret, binding, last.id) : null,
    });
  });
}
