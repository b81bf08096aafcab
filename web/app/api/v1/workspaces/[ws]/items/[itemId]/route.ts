import { listItemPages } from '@quire/db/items';
import { decodedPathParam, json, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { itemJson, itemPageJson } from '@quire/web/lib/archiveHttp';
import { updateItemBody } from '@quire/web/lib/archiveSchemas';
import { pool } from '@quire/web/lib/server';
import { requireItem, updateItem } from '@quire/web/services/archive';
import { deleteItem } from '@quire/web/services/items';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; itemId: string };

/** GET .../items/{itemId} (F2): the item, its metadata and its pages in order. */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const item = await requireItem(principal, decodedPathParam(params.itemId, 'itemId'));
    const pages = await listItemPages(pool(), principal.workspaceId, item.id);
    return json({ ...itemJson(principal.workspaceId, item), pageList: pages.map(itemPageJson) });
  });
}

/** PATCH .../items/{itemId} (F2): title, metadata, language, collection; audited (M4). */
export async function PATCH(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const body = await readJson(request, updateItemBody);
    const item = await updateItem(principal, decodedPathParam(params.itemId, 'itemId'), body);
    return json(itemJson(principal.workspaceId, item));
  });
}

/**
 * DELETE /api/v1/workspaces/{ws}/items/{itemId} (U3): children first in one transaction,
 * blobs handed to the fenced cleanup; 409 while a job of the item is active.
 */
export async function DELETE(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) =>
    json(await deleteItem(principal, decodedPathParam(params.itemId, 'itemId'))),
  );
}
