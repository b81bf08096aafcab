import { blobUsage } from '@quire/db/blobs';
import { operationsFigures } from '@quire/db/console';
import { installationOverview } from '@quire/db/operatorControls';
import { json } from '@quire/web/lib/api';
import { withOperator } from '@quire/web/lib/operatorApi';
import { config, pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/operator/operations (M1, O3, U2): the alert figures across every workspace (queue
 * age, running attempts, failed deliveries, cleanups, bytes), with each workspace's share.
 */
export async function GET(request: Request) {
  return withOperator(request, undefined, async () => {
    const now = new Date();
    const [queue, usage, overview] = await Promise.all([
      operationsFigures(pool(), null),
      blobUsage(pool(), now),
      installationOverview(pool(), now, config().QUIRE_GLOBAL_QUOTA_BYTES ?? null),
    ]);
    return json({
      queue,
      storage: {
        totalBytes: usage.totalBytes,
        quotaBytes: overview.effectiveQuotaBytes,
        pendingCleanups: usage.pendingCleanups,
        failedCleanups: usage.failedCleanups,
        oldestPendingCleanupAgeMs: usage.oldestPendingCleanupAgeMs,
      },
      workspaces: overview.workspaces.map((w) => ({
        workspaceId: w.id,
        name: w.name,
        storedBytes: w.storedBytes,
        spentTodayMicros: w.spentTodayMicros,
        activeJobs: w.activeJobs,
        waitingJobs: w.waitingJobs,
      })),
    });
  });
}
