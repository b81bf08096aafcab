import { awaitsOperator } from '@quire/core/failures';
import { KNOWN_PROVIDERS } from '@quire/core/providerCatalogue';
import { spendSummary } from '@quire/db/budget';
import { getProviderStates } from '@quire/db/providerState';
import { json, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/workspaces/{ws}/providers (Q3, B1): each provider's queue state (active, or
 * paused with its reason and when it resumes) and this workspace's spend today against its
 * daily budget. The global budget and spend across workspaces are the operators' (M1).
 */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    const [states, spend] = await Promise.all([
      getProviderStates(pool()),
      spendSummary(pool(), principal.workspaceId, new Date()),
    ]);
    const names = [...new Set([...KNOWN_PROVIDERS, ...states.map((s) => s.provider)])].sort();
    return json({
      day: spend.day,
      resetsAt: spend.resetsAt.toISOString(),
      budget: { workspace: spend.workspace },
      providers: names.map((name) => {
        const state = states.find((s) => s.provider === name);
        const spent = spend.providers.find((p) => p.provider === name);
        return {
          name,
          status: state?.status ?? 'active',
          reason: state?.reason ?? null,
          pausedAt: state?.paused_at?.toISOString() ?? null,
          resumeAt: state?.resume_at?.toISOString() ?? null,
          needsOperator: state?.status === 'paused' && awaitsOperator(state.reason),
          spentTodayMicros: spent?.spentMicros ?? 0,
          callsToday: spent?.calls ?? 0,
        };
      }),
    });
  });
}
