import { listItemPages } from '@quire/db/items';
import { json, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { itemPageJson } from '@quire/web/lib/archiveHttp';
import { arrangePagesBody } from '@quire/web/lib/archiveSchemas';
import { pool } from '@quire/web/lib/server';
import { arrangePages } from '@quire/web/services/archive';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; itemId: string };

/**
 * PUT .../items/{itemId}/pages (F2): the item's pages in their new order, in one audited
 * transaction; pages of other items named here move to this item (created when new). Every
 * page keeps its id, canvas URI, revisions and jobs.
 */
export async function PUT(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const itemId = decodeURIComponent(params.itemId);
    const { pageIds } = await readJson(request, arrangePagesBody);
    const arranged = await arrangePages(principal, itemId, pageIds);
    const pages = await listItemPages(pool(), principal.workspaceId, itemId);
    return json({ itemId, moved: arranged.moved, pageList: pages.map(itemPageJson) });
  });
}
