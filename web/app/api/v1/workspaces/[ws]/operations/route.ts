import { blobUsage } from '@quire/db/blobs';
import { operationsFigures } from '@quire/db/console';
import { json, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/workspaces/{ws}/operations: the alert figures (O3, U2): queue age, failed
 * deliveries, failed cleanup rows, oldest pending cleanup, bytes stored by this workspace
 * and in total.
 */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async ({ workspaceId }) => {
    const [queue, usage] = await Promise.all([
      operationsFigures(pool(), workspaceId),
      blobUsage(pool()),
    ]);
    return json({
      queue,
      storage: {
        workspaceBytes: usage.workspaces.find((w) => w.workspaceId === workspaceId)?.bytes ?? 0,
        totalBytes: usage.totalBytes,
        pendingCleanups: usage.pendingCleanups,
        failedCleanups: usage.failedCleanups,
        oldestPendingCleanupAgeMs: usage.oldestPendingCleanupAgeMs,
      },
    });
  });
}
