import { installationOverview } from '@quire/db/operatorControls';
import { json, readJson } from '@quire/web/lib/api';
import { withOperator } from '@quire/web/lib/operatorApi';
import { installationControlsBody } from '@quire/web/lib/operatorSchemas';
import { config, pool } from '@quire/web/lib/server';
import { changeInstallationControls } from '@quire/web/services/operator';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/operator/installation (M1): the global budget and quota with today's spend and
 * the bytes stored across every workspace.
 */
export async function GET(request: Request) {
  return withOperator(request, undefined, async () => {
    const overview = await installationOverview(
      pool(),
      new Date(),
      config().QUIRE_GLOBAL_QUOTA_BYTES ?? null,
    );
    const { workspaces, ...installation } = overview;
    return json({ ...installation, workspaceCount: workspaces.length });
  });
}

/** PATCH /api/v1/operator/installation (M4): the global daily budget and byte quota, audited. */
export async function PATCH(request: Request) {
  return withOperator(request, undefined, async (operator) => {
    const change = await readJson(request, installationControlsBody);
    return json({ controls: await changeInstallationControls(operator, change) });
  });
}
