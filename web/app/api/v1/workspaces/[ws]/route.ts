import { NotFoundError } from '@quire/db/errors';
import { getWorkspace, type Workspace } from '@quire/db/workspaces';
import { json, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { workspaceSettingsBody } from '@quire/web/lib/schemas';
import { pool } from '@quire/web/lib/server';
import { updateRecordingRetention } from '@quire/web/services/workspaces';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** GET /api/v1/workspaces/{ws}: the workspace the key belongs to. */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    const workspace = await getWorkspace(pool(), principal.workspaceId);
    if (!workspace) throw new NotFoundError('workspace_not_found', 'workspace not found');
    return json(workspaceJson(workspace));
  });
}

function workspaceJson(workspace: Workspace) {
  return {
    workspaceId: workspace.id,
    name: workspace.name,
    createdAt: workspace.createdAt,
    recordingRetention: workspace.recordingRetention,
  };
}

/**
 * PATCH /api/v1/workspaces/{ws}: the workspace's settings. V6 `recordingRetention`: `keep` or
 * `delete-after-recognition`, for recordings handed to an engine from now on; recorded in the
 * audit log with the key that changed it.
 */
export async function PATCH(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    const body = await readJson(request, workspaceSettingsBody);
    const workspace = await updateRecordingRetention(principal, body.recordingRetention);
    return json(workspaceJson(workspace));
  });
}
