import { ProviderError } from '../core/failures';
import { type BilledProvider, billedProvider, costMicros } from '../core/pricing';
import type { CallCost } from '../core/provider';
import { checkBudget } from '../db/budget';
import { recordProviderCall } from '../db/ledger';
import type { AttemptContext, TranscriptionDeps } from './attemptContext';

/** B1: what an attempt's calls cost: the budget guard before a paid call, the ledger after. */
export function createAttemptBilling(deps: TranscriptionDeps) {
  const { pool } = deps;

  /** B1: an engine or polish call's ledger row, outside any other write. */
  async function ledger(
    ctx: AttemptContext,
    operation: string,
    cost: CallCost | null,
    outcome: string,
    by?: BilledProvider,
  ) {
    await recordProviderCall(pool, {
      by: by ?? billedProvider(ctx.snapshot, 'engine'),
      workspaceId: ctx.workspaceId,
      jobId: ctx.fence.jobId,
      attemptNumber: ctx.fence.attemptNumber,
      operation,
      cost,
      outcome,
      occurredAt: deps.now?.(),
    });
  }

  /**
   * A resume time on this worker's clock, expressed on the real clock the workflow's timers
   * run on (they differ only when a test injects a clock).
   */
  function onWorkflowClock(at: Date | null): number | null {
    if (at === null) return null;
    const now = deps.now?.() ?? new Date();
    return Date.now() + (at.getTime() - now.getTime());
  }

  /**
   * B1: a paid call is made only within the day's budget, estimated from the snapshot's
   * price for the call's unit. Free engines (price 0) never wait.
   */
  async function guardBudget(
    ctx: AttemptContext,
    cost: CallCost,
    by: BilledProvider = billedProvider(ctx.snapshot, 'engine'),
  ): Promise<void> {
    const estimatedMicros = costMicros(by.price, cost);
    if (estimatedMicros <= 0) return;
    const now = deps.now?.() ?? new Date();
    const check = await checkBudget(pool, {
      workspaceId: ctx.workspaceId,
      provider: by.provider,
      estimatedMicros,
      now,
    });
    if (!check.ok) {
      throw new ProviderError(
        'budget',
        `daily ${check.exceeded} budget spent`,
        Math.max(1_000, check.resetsAt.getTime() - now.getTime()),
        check.exceeded === 'workspace' ? 'workspace' : 'provider',
      );
    }
  }

  return { ledger, onWorkflowClock, guardBudget };
}
