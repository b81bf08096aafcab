import { type BilledProvider, billedProvider } from '../core/pricing';
import type { CallCost, JobSnapshot } from '../core/provider';
import type { Queryable } from './pool';

/** B1: every provider call is written to a ledger; spend is summed from it. */
export async function recordProviderCall(
  db: Queryable,
  call: {
    workspaceId: number;
    jobId: string;
    attemptNumber: number;
    snapshot: JobSnapshot;
    operation: string;
    cost: CallCost | null;
    outcome: string;
    /** Defaults to the database clock; a test may inject its own day. */
    occurredAt?: Date;
    /** M3: the provider that made the call, when not the job's own (polish). */
    by?: BilledProvider;
  },
): Promise<void> {
  const by = call.by ?? billedProvider(call.snapshot, 'engine');
  const price = call.cost ? (by.price[call.cost.unit] ?? 0) : 0;
  const costMicros = call.cost ? Math.round(call.cost.units * price) : 0;
  await db.query(
    `INSERT INTO provider_calls (workspace_id, job_id, attempt_number, provider, operation, units, unit, cost_micros,
       outcome, occurred_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, coalesce($10, now()))`,
    [
      call.workspaceId,
      call.jobId,
      call.attemptNumber,
      by.provider,
      call.operation,
      call.cost?.units ?? 0,
      call.cost?.unit ?? 'call',
      costMicros,
      call.outcome,
      call.occurredAt ?? null,
    ],
  );
}
