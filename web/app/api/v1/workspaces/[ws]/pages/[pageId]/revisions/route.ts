import { listRevisions } from '@quire/db/pages';
import { ApiError, json, pathId, type RouteContext, readQuery, withApi } from '@quire/web/lib/api';
import { revisionsQuery } from '@quire/web/lib/schemas';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string };

/** GET /api/v1/workspaces/{ws}/pages/{pageId}/revisions: the history with provenance, newest first. */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const pageId = pathId(params.pageId, 'pageId');
    const query = readQuery(request, revisionsQuery);
    const rows = await listRevisions(pool(), principal.workspaceId, pageId, {
      beforeRevision: query.before,
      limit: query.pageSize + 1,
    });
    if (!rows) throw new ApiError('page_not_found', 'page not found');
    const revisions = rows.slice(0, query.pageSize);
    const last = revisions[revisions.length - 1];
    return json({
      revisions: revisions.map((r) => ({ ...r, createdAt: r.createdAt.toISOString() })),
      nextBefore: rows.length > query.pageSize && last ? last.revision : null,
    });
  });
}
