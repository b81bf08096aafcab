import { NotFoundError } from '@quire/db/errors';
import { getWorkspace } from '@quire/db/workspaces';
import { json, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** GET /api/v1/workspaces/{ws}: the workspace the key belongs to. */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    const workspace = await getWorkspace(pool(), principal.workspaceId);
    if (!workspace) throw new NotFoundError('workspace_not_found', 'workspace not found');
    return json({
      workspaceId: workspace.id,
      name: workspace.name,
      createdAt: workspace.createdAt,
    });
  });
}
