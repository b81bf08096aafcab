import { type BilledProvider, costMicros } from '../core/pricing';
import type { CallCost } from '../core/provider';
import type { Queryable } from './pool';

/**
 * B1: every provider call is written to a ledger; spend is summed from it. This module is the
 * ledger's one writer: a row is inserted by `recordProviderCall`, or, on the line hot path, by
 * `providerCallInsert` inside the checkpoint's own statement.
 */
export interface ProviderCall {
  workspaceId: number;
  jobId: string;
  attemptNumber: number;
  /** M3: the provider that made the call, at its price when the job was created. */
  by: BilledProvider;
  operation: string;
  /** Null: nothing to bill (a refused call). */
  cost: CallCost | null;
  outcome: string;
  /** Defaults to the database clock; a test may inject its own day. */
  occurredAt?: Date;
}

/**
 * The ledger row's INSERT, its parameters numbered from `$first` on, and their values: for a
 * statement that writes the row beside others (the line checkpoint's, db/checkpoints.ts).
 */
export function providerCallInsert(
  call: ProviderCall,
  first: number,
): { sql: string; values: unknown[] } {
  const $ = (n: number) => `$${first + n}`;
  return {
    sql: `INSERT INTO provider_calls (workspace_id, job_id, attempt_number, provider, operation, units, unit,
                                cost_micros, outcome, occurred_at)
       VALUES (${$(0)}, ${$(1)}, ${$(2)}, ${$(3)}, ${$(4)}, ${$(5)}, ${$(6)}, ${$(7)}, ${$(8)}, coalesce(${$(9)}, now()))`,
    values: [
      call.workspaceId,
      call.jobId,
      call.attemptNumber,
      call.by.provider,
      call.operation,
      call.cost?.units ?? 0,
      call.cost?.unit ?? 'call',
      costMicros(call.by.price, call.cost),
      call.outcome,
      call.occurredAt ?? null,
    ],
  };
}

/** B1: writes a provider call's ledger row. */
export async function recordProviderCall(db: Queryable, call: ProviderCall): Promise<void> {
  const insert = providerCallInsert(call, 1);
  await db.query(insert.sql, insert.values);
}
