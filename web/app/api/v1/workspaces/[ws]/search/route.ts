import { json, type RouteContext, readQuery, withApi } from '@quire/web/lib/api';
import { searchQuery } from '@quire/web/lib/schemas';
import { search } from '@quire/web/services/archive';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/workspaces/{ws}/search?q=: the derived full-text index of current revisions,
 * this workspace only, best match first, at most `limit` (default 20, at most 100) hits. Each
 * hit names up to three lines (segment index) with a snippet whose matched words are given as
 * offsets (F3); `collectionId` (with everything below it) and `kind` narrow the search.
 */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    const { q, limit, collectionId, kind, lineState } = readQuery(request, searchQuery);
    const hits = await search(principal, { q, limit, collectionId, kind, lineState });
    return json({ hits });
  });
}
