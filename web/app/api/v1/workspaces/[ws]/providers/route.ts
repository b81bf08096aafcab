import { spendSummary } from '@quire/db/budget';
import { json, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool } from '@quire/web/lib/server';
import { providerQueues } from '@quire/web/services/providers';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/workspaces/{ws}/providers (Q3, B1, M3): each provider this installation offers,
 * with the pause that holds this workspace's jobs (the installation's, or its own), and this
 * workspace's spend today against its daily budget. The global budget and spend across
 * workspaces are the operators' (M1).
 */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    const [queues, spend] = await Promise.all([
      providerQueues(principal),
      spendSummary(pool(), principal.workspaceId, new Date()),
    ]);
    return json({
      day: spend.day,
      resetsAt: spend.resetsAt.toISOString(),
      budget: { workspace: spend.workspace },
      providers: queues.map((queue) => {
        const spent = spend.providers.find((p) => p.provider === queue.name);
        return {
          name: queue.name,
          credentials: queue.credentials,
          status: queue.status,
          reason: queue.reason,
          pausedAt: queue.pausedAt?.toISOString() ?? null,
          resumeAt: queue.resumeAt?.toISOString() ?? null,
          needsOperator: queue.needsOperator,
          resumable: queue.resumable,
          spentTodayMicros: spent?.spentMicros ?? 0,
          callsToday: spent?.calls ?? 0,
        };
      }),
    });
  });
}
