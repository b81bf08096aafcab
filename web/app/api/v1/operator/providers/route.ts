import { awaitsOperator } from '@quire/core/failures';
import { KNOWN_PROVIDERS } from '@quire/core/providerCatalogue';
import { getGlobalBudget, utcDayBounds } from '@quire/db/budget';
import { providerSpendToday } from '@quire/db/operatorControls';
import { getProviderStates } from '@quire/db/providerState';
import { json } from '@quire/web/lib/api';
import { withOperator } from '@quire/web/lib/operatorApi';
import { pool } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * GET /api/v1/operator/providers (M1, Q3, B1): every provider's queue state, and today's spend
 * and calls per provider across all workspaces against the global budget.
 */
export async function GET(request: Request) {
  return withOperator(request, undefined, async () => {
    const now = new Date();
    const [states, spend, budget] = await Promise.all([
      getProviderStates(pool()),
      providerSpendToday(pool(), now),
      getGlobalBudget(pool()),
    ]);
    const names = [...new Set([...KNOWN_PROVIDERS, ...states.map((s) => s.provider)])].sort();
    const { start, end } = utcDayBounds(now);
    return json({
      day: start.toISOString().slice(0, 10),
      resetsAt: end.toISOString(),
      budget: {
        spentMicros: spend.reduce((sum, p) => sum + p.spentMicros, 0),
        budgetMicros: budget,
      },
      providers: names.map((name) => {
        const state = states.find((s) => s.provider === name);
        const spent = spend.find((p) => p.provider === name);
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
