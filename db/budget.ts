import { NotFoundError } from './errors';
import type { Queryable } from './pool';
import {
  readCountSetting,
  SETTINGS,
  settingCount,
  settingValueSql,
  writeCountSetting,
} from './settings';

/**
 * B1: daily spend budgets, per workspace (`workspaces.daily_budget_micros`) and global
 * (`settings` key `global_daily_budget_micros`, a jsonb number), over the UTC day. Spend is
 * summed from the `provider_calls` ledger (db/ledger.ts). Null or absent means unlimited.
 * The clock is always injected, so a test can walk past midnight.
 *
 * The check runs before a paid call and is not a reservation: callers racing each other may
 * overshoot by at most their own in-flight calls, which the next check then sees.
 */
export type BudgetCheck =
  | { ok: true }
  | {
      ok: false;
      exceeded: 'workspace' | 'global';
      spentMicros: number;
      budgetMicros: number;
      /** The next UTC midnight, when the day's spend starts again from zero. */
      resetsAt: Date;
    };

export function utcDayBounds(now: Date): { start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
  return { start, end };
}

async function spentBetween(
  db: Queryable,
  workspaceId: number | null,
  start: Date,
  end: Date,
): Promise<number> {
  const { rows } = await db.query(
    `SELECT coalesce(sum(cost_micros), 0)::bigint AS spent FROM provider_calls
      WHERE occurred_at >= $1 AND occurred_at < $2 AND ($3::bigint IS NULL OR workspace_id = $3)`,
    [start, end, workspaceId],
  );
  return Number(rows[0].spent);
}

async function workspaceBudget(db: Queryable, workspaceId: number): Promise<number | null> {
  const { rows } = await db.query('SELECT daily_budget_micros FROM workspaces WHERE id = $1', [
    workspaceId,
  ]);
  if (!rows[0])
    throw new NotFoundError('workspace_not_found', `workspace ${workspaceId} does not exist`);
  return rows[0].daily_budget_micros === null ? null : Number(rows[0].daily_budget_micros);
}

export async function getGlobalBudget(db: Queryable): Promise<number | null> {
  return readCountSetting(db, SETTINGS.globalDailyBudgetMicros);
}

/**
 * Whether a call estimated at `estimatedMicros` fits today's budgets. A free call (estimate
 * 0) always fits; a paid call fits when spent + estimate stays within each budget. The
 * workspace budget is checked first.
 */
export async function checkBudget(
  db: Queryable,
  args: { workspaceId: number; provider: string; estimatedMicros: number; now: Date },
): Promise<BudgetCheck> {
  if (args.estimatedMicros <= 0) return { ok: true };
  // Both limits in one round trip: this runs before every paid call.
  const limits = await db.query(
    `SELECT w.daily_budget_micros AS ws, ${settingValueSql('$2')} AS global
       FROM workspaces w WHERE w.id = $1`,
    [args.workspaceId, SETTINGS.globalDailyBudgetMicros],
  );
  if (!limits.rows[0]) {
    throw new NotFoundError('workspace_not_found', `workspace ${args.workspaceId} does not exist`);
  }
  const ws = limits.rows[0].ws === null ? null : Number(limits.rows[0].ws);
  const { start, end } = utcDayBounds(args.now);
  if (ws !== null) {
    const spent = await spentBetween(db, args.workspaceId, start, end);
    if (spent + args.estimatedMicros > ws) {
      return {
        ok: false,
        exceeded: 'workspace',
        spentMicros: spent,
        budgetMicros: ws,
        resetsAt: end,
      };
    }
  }
  const global = settingCount(limits.rows[0].global);
  if (global !== null) {
    const spent = await spentBetween(db, null, start, end);
    if (spent + args.estimatedMicros > global) {
      return {
        ok: false,
        exceeded: 'global',
        spentMicros: spent,
        budgetMicros: global,
        resetsAt: end,
      };
    }
  }
  return { ok: true };
}

function assertBudget(micros: number | null): void {
  if (micros !== null && (!Number.isSafeInteger(micros) || micros < 0)) {
    throw new RangeError('a daily budget is a non-negative integer of micro-units, or null');
  }
}

/**
 * B1: while a workspace's own budget is spent (recorded by the attempt that found it so, in
 * `workspaces.budget_paused_until`), its jobs claim nothing: the claim answers paused until
 * the reset. Null when the workspace may run.
 */
export async function workspaceBudgetPause(
  db: Queryable,
  workspaceId: number,
  now: Date,
): Promise<{ reason: 'budget'; resumeAt: Date } | null> {
  const { rows } = await db.query<{ until: Date | null }>(
    'SELECT budget_paused_until AS until FROM workspaces WHERE id = $1',
    [workspaceId],
  );
  const until = rows[0]?.until ?? null;
  return until !== null && until.getTime() > now.getTime()
    ? { reason: 'budget', resumeAt: until }
    : null;
}

/** Sets (or with null, lifts) a workspace's daily budget; a spent-budget pause ends with it. */
export async function setWorkspaceBudget(
  db: Queryable,
  workspaceId: number,
  micros: number | null,
): Promise<void> {
  assertBudget(micros);
  const updated = await db.query(
    'UPDATE workspaces SET daily_budget_micros = $2, budget_paused_until = NULL WHERE id = $1',
    [workspaceId, micros],
  );
  if (updated.rowCount !== 1) {
    throw new NotFoundError('workspace_not_found', `workspace ${workspaceId} does not exist`);
  }
}

/** Sets (or with null, lifts) the global daily budget. */
export async function setGlobalBudget(db: Queryable, micros: number | null): Promise<void> {
  assertBudget(micros);
  await writeCountSetting(db, SETTINGS.globalDailyBudgetMicros, micros);
}

export interface SpendSummary {
  /** The UTC day, YYYY-MM-DD. */
  day: string;
  resetsAt: Date;
  workspace: { spentMicros: number; budgetMicros: number | null };
  global: { spentMicros: number; budgetMicros: number | null };
  /** This workspace's spend today per provider, most expensive first. */
  providers: Array<{ provider: string; spentMicros: number; calls: number }>;
}

/** For the console: today's spend against the budgets, and per provider. */
export async function spendSummary(
  db: Queryable,
  workspaceId: number,
  now: Date,
): Promise<SpendSummary> {
  const { start, end } = utcDayBounds(now);
  const budget = await workspaceBudget(db, workspaceId);
  const { rows } = await db.query(
    `SELECT provider, coalesce(sum(cost_micros), 0)::bigint AS spent, count(*)::int AS calls
       FROM provider_calls
      WHERE workspace_id = $1 AND occurred_at >= $2 AND occurred_at < $3
      GROUP BY provider ORDER BY spent DESC, provider`,
    [workspaceId, start, end],
  );
  const providers = rows.map((r) => ({
    provider: r.provider as string,
    spentMicros: Number(r.spent),
    calls: r.calls,
  }));
  return {
    day: start.toISOString().slice(0, 10),
    resetsAt: end,
    workspace: {
      spentMicros: providers.reduce((sum, p) => sum + p.spentMicros, 0),
      budgetMicros: budget,
    },
    global: {
      spentMicros: await spentBetween(db, null, start, end),
      budgetMicros: await getGlobalBudget(db),
    },
    providers,
  };
}
