import { blobUsage } from '@quire/db/blobs';
import { operationsFigures } from '@quire/db/console';
import { authorize } from '@quire/web/lib/http';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/workspaces/{ws}/operations: the alert figures (O3, U2): queue age, failed
 * deliveries, failed cleanup rows, oldest pending cleanup, bytes stored by this workspace
 * and in total.
 */
export async function GET(request: Request, { params }: { params: Promise<{ ws: string }> }) {
  const { ws } = await params;
  const auth = await authorize(request, ws);
  if ('response' in auth) return auth.response;
  const workspaceId = auth.principal.workspaceId;
  const [queue, usage] = await Promise.all([
    operationsFigures(pool(), workspaceId),
    blobUsage(pool()),
  ]);
  return Response.json({
    queue,
    storage: {
      workspaceBytes: usage.workspaces.find((w) => w.workspaceId === workspaceId)?.bytes ?? 0,
      totalBytes: usage.totalBytes,
      pendingCleanups: usage.pendingCleanups,
      failedCleanups: usage.failedCleanups,
      oldestPendingCleanupAgeMs: usage.oldestPendingCleanupAgeMs,
    },
  });
}
