import { searchPages } from '@quire/db/pages';
import { json, type RouteContext, readQuery, withApi } from '@quire/web/lib/api';
import { searchQuery } from '@quire/web/lib/schemas';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/workspaces/{ws}/search?q=: the derived full-text index of current revisions,
 * this workspace only, best match first, at most `limit` (default 20, at most 100) hits.
 */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    const { q, limit } = readQuery(request, searchQuery);
    const hits = await searchPages(pool(), principal.workspaceId, q, limit);
    return json({ hits });
  });
}
