import { workspaceUsageBytes } from '@quire/db/blobs';
import { operationsFigures, workspaceCleanupFigures } from '@quire/db/console';
import { json, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/workspaces/{ws}/operations: the alert figures (O3, U2) of this workspace only
 * (M1): queue age, failed deliveries, its failed and pending cleanup rows, the bytes it
 * stores. Figures across workspaces are the operators' (`/api/v1/operator/operations`).
 */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async ({ workspaceId }) => {
    const [queue, bytes, cleanups] = await Promise.all([
      operationsFigures(pool(), workspaceId),
      workspaceUsageBytes(pool(), workspaceId),
      workspaceCleanupFigures(pool(), workspaceId, new Date()),
    ]);
    return json({ queue, storage: { workspaceBytes: bytes, ...cleanups } });
  });
}
