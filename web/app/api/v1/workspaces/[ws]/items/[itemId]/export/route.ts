import { iiifItemPages } from '@quire/db/interchange';
import { ApiError, type RouteContext, readQuery, withApi } from '@quire/web/lib/api';
import { itemExportQuery } from '@quire/web/lib/schemas';
import { searchablePdfResponse } from '@quire/web/lib/searchablePdf';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; itemId: string };

/**
 * GET /api/v1/workspaces/{ws}/items/{itemId}/export?format=pdf (I7): the item's searchable
 * PDF, its image pages in order, each with its current revision's lines as invisible text,
 * streamed a page at a time. An item without image pages is a 422.
 */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    readQuery(request, itemExportQuery);
    const itemId = decodeURIComponent(params.itemId);
    const found =
      itemId.length >= 1 && itemId.length <= 200
        ? await iiifItemPages(pool(), principal.workspaceId, itemId, 'draft')
        : undefined;
    if (!found) throw new ApiError('item_not_found', 'item not found');
    return searchablePdfResponse(found.pages, {
      filename: `item-${itemId.replace(/[^A-Za-z0-9._-]/g, '_')}`,
      ...(found.title ? { title: found.title } : {}),
      cacheControl: 'no-store',
    });
  });
}
