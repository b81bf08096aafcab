import { installationOverview } from '@quire/db/operatorControls';
import { json } from '@quire/web/lib/api';
import { withOperator } from '@quire/web/lib/operatorApi';
import { config, pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/operator/workspaces (M1, M4): every workspace with its controls (budget, quota,
 * active-job cap, enabled providers), spend today, bytes stored, slots held and jobs waiting.
 */
export async function GET(request: Request) {
  return withOperator(request, undefined, async () => {
    const overview = await installationOverview(
      pool(),
      new Date(),
      config().QUIRE_GLOBAL_QUOTA_BYTES ?? null,
    );
    return json({ workspaces: overview.workspaces });
  });
}
