import { json, type RouteContext, withApi } from '@quire/web/lib/api';
import { deleteItem } from '@quire/web/services/items';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * DELETE /api/v1/workspaces/{ws}/items/{itemId} (U3): children first in one transaction,
 * blobs handed to the fenced cleanup; 409 while a job of the item is active.
 */
export async function DELETE(
  request: Request,
  context: RouteContext<{ ws: string; itemId: string }>,
) {
  return withApi(request, context, async (principal, params) =>
    json(await deleteItem(principal, decodeURIComponent(params.itemId))),
  );
}
