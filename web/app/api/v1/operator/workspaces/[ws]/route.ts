import { NotFoundError } from '@quire/db/errors';
import { installationOverview } from '@quire/db/operatorControls';
import { json, pathId, readJson } from '@quire/web/lib/api';
import { withOperator } from '@quire/web/lib/operatorApi';
import { workspaceControlsBody } from '@quire/web/lib/operatorSchemas';
import { config, pool } from '@quire/web/lib/server';
import { changeWorkspaceControls } from '@quire/web/services/operator';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string };

/** GET /api/v1/operator/workspaces/{ws} (M1): one workspace's controls and figures. */
export async function GET(request: Request, context: { params: Promise<Params> }) {
  return withOperator(request, context, async (_operator, { ws }) => {
    const id = pathId(ws, 'ws');
    const overview = await installationOverview(
      pool(),
      new Date(),
      config().QUIRE_GLOBAL_QUOTA_BYTES ?? null,
    );
    const workspace = overview.workspaces.find((w) => w.id === id);
    if (!workspace) throw new NotFoundError('workspace_not_found', 'workspace not found');
    return json(workspace);
  });
}

/**
 * PATCH /api/v1/operator/workspaces/{ws} (M4): any of the daily budget, byte quota, active-job
 * cap and enabled providers; each field given is one audit row with its before and after.
 */
export async function PATCH(request: Request, context: { params: Promise<Params> }) {
  return withOperator(request, context, async (operator, { ws }) => {
    const id = pathId(ws, 'ws');
    const change = await readJson(request, workspaceControlsBody);
    return json({ workspaceId: id, controls: await changeWorkspaceControls(operator, id, change) });
  });
}
