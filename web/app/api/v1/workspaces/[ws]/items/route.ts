import { json, type RouteContext, readQuery, withApi } from '@quire/web/lib/api';
import { itemJson } from '@quire/web/lib/archiveHttp';
import { listItemsQuery } from '@quire/web/lib/archiveSchemas';
import { itemPage } from '@quire/web/services/archive';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/workspaces/{ws}/items (F2, L1): the workspace's items by id, keyset-paged, each
 * with its page and transcribed-page counts; `collection` narrows to one collection or `root`.
 */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    const query = readQuery(request, listItemsQuery);
    const page = await itemPage(principal, query);
    return json({
      items: page.items.map((i) => itemJson(principal.workspaceId, i)),
      nextPageToken: page.nextPageToken,
    });
  });
}
