import { getRevision } from '@quire/db/pages';
import { ApiError, json, pathId, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string; revision: string };

/** GET /api/v1/workspaces/{ws}/pages/{pageId}/revisions/{revision}: one kept revision. */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const pageId = pathId(params.pageId, 'pageId');
    const revision = params.revision === '0' ? 0 : pathId(params.revision, 'revision');
    const found = await getRevision(pool(), principal.workspaceId, pageId, revision);
    if (!found) throw new ApiError('revision_not_found', 'revision not found');
    return json({ pageId, ...found, createdAt: found.createdAt.toISOString() });
  });
}
