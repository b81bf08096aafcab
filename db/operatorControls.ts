import { DomainError, type ErrorCode } from '../core/errors';
import { KNOWN_PROVIDERS } from '../core/providerCatalogue';
import { type AuditActor, type AuditEntryInput, recordAudit } from './auditLog';
import { blobUsage } from './blobs';
import { setGlobalBudget, setWorkspaceBudget, utcDayBounds } from './budget';
import { NotFoundError } from './errors';
import { wakeSlotDispatchers } from './jobEnds';
import { slotFigures } from './jobSlots';
import { afterCommit, type Pool, type PoolClient, type Queryable, withTransaction } from './pool';
import { getProviderStates } from './providerState';
import { readCountSetting, SETTINGS, writeCountSetting } from './settings';

/**
 * M4: what operators set on the installation and on each workspace, each change written with
 * its audit row (before and after) in one transaction. The admin CLI, the operator API and
 * the console's operator view all come through here.
 */
export interface WorkspaceControls {
  /** B1: the workspace's daily spend budget in micro-units; null is unlimited. */
  dailyBudgetMicros: number | null;
  /** U2: bytes the workspace may store; null is no workspace quota. */
  quotaBytes: number | null;
  /** Jobs holding a slot (active and admitted) at once; null is no cap. */
  activeJobCap: number | null;
  /** Providers the workspace's jobs may use; null is every provider the installation has. */
  enabledProviders: string[] | null;
}

export interface InstallationControls {
  /** B1: the global daily budget; null is unlimited. */
  dailyBudgetMicros: number | null;
  /** U2: bytes all workspaces may store together, as set by an operator (null: the configured fallback). */
  quotaBytes: number | null;
}

const INSTALLATION_LOCK_CLASS = 7_401_122;

const invalid = (code: ErrorCode, message: string) => new DomainError(code, message);

function checkCount(
  name: 'dailyBudgetMicros' | 'quotaBytes' | 'activeJobCap',
  value: number | null,
  min: number,
  max: number,
): void {
  if (value !== null && (!Number.isSafeInteger(value) || value < min || value > max)) {
    throw invalid(`invalid_${name}`, `${name} must be an integer from ${min} to ${max}, or null`);
  }
}

/** Provider names must be in the catalogue; duplicates are folded, order kept. */
function normaliseProviders(names: string[] | null): string[] | null {
  if (names === null) return null;
  const unknown = names.filter((n) => !KNOWN_PROVIDERS.includes(n));
  if (unknown.length > 0) {
    throw invalid('unknown_provider', `unknown provider: ${unknown.slice(0, 5).join(', ')}`);
  }
  return [...new Set(names)];
}

function workspaceControlsOf(row: Record<string, unknown>): WorkspaceControls {
  return {
    dailyBudgetMicros: row.daily_budget_micros === null ? null : Number(row.daily_budget_micros),
    quotaBytes: row.quota_bytes === null ? null : Number(row.quota_bytes),
    activeJobCap: (row.active_job_cap as number | null) ?? null,
    enabledProviders: (row.enabled_providers as string[] | null) ?? null,
  };
}

const CONTROL_COLUMNS = 'daily_budget_micros, quota_bytes, active_job_cap, enabled_providers';

export async function getWorkspaceControls(
  db: Queryable,
  workspaceId: number,
): Promise<WorkspaceControls> {
  const { rows } = await db.query(`SELECT ${CONTROL_COLUMNS} FROM workspaces WHERE id = $1`, [
    workspaceId,
  ]);
  if (!rows[0]) throw new NotFoundError('workspace_not_found', 'workspace not found');
  return workspaceControlsOf(rows[0]);
}

/**
 * M2/M4: the providers a workspace's jobs may use, or null for every provider the
 * installation has. Job creation checks requests against this (with the catalogue).
 */
export async function providersEnabledFor(
  db: Queryable,
  workspaceId: number,
): Promise<readonly string[] | null> {
  return (await getWorkspaceControls(db, workspaceId)).enabledProviders;
}

/**
 * Changes the given controls of a workspace; every field given is an audit row, even one set
 * to the value it had. A raised or lifted cap wakes the dispatcher for the jobs waiting.
 */
export async function setWorkspaceControls(
  pool: Pool,
  actor: AuditActor,
  workspaceId: number,
  change: Partial<WorkspaceControls>,
): Promise<WorkspaceControls> {
  if (change.dailyBudgetMicros !== undefined) {
    checkCount('dailyBudgetMicros', change.dailyBudgetMicros, 0, Number.MAX_SAFE_INTEGER);
  }
  if (change.quotaBytes !== undefined) {
    checkCount('quotaBytes', change.quotaBytes, 0, Number.MAX_SAFE_INTEGER);
  }
  if (change.activeJobCap !== undefined)
    checkCount('activeJobCap', change.activeJobCap, 1, 100_000);
  const providers =
    change.enabledProviders === undefined ? undefined : normaliseProviders(change.enabledProviders);
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `SELECT ${CONTROL_COLUMNS} FROM workspaces WHERE id = $1 FOR UPDATE`,
      [workspaceId],
    );
    if (!rows[0]) throw new NotFoundError('workspace_not_found', 'workspace not found');
    const before = workspaceControlsOf(rows[0]);
    const after = { ...before };
    const target = `workspaces/${workspaceId}`;
    const audit = (action: AuditEntryInput['action'], from: unknown, to: unknown) =>
      recordAudit(client, actor, { action, target, workspaceId, before: from, after: to });
    if (change.dailyBudgetMicros !== undefined) {
      await setWorkspaceBudget(client, workspaceId, change.dailyBudgetMicros);
      after.dailyBudgetMicros = change.dailyBudgetMicros;
      await audit(
        'workspace.daily_budget',
        { dailyBudgetMicros: before.dailyBudgetMicros },
        { dailyBudgetMicros: after.dailyBudgetMicros },
      );
    }
    if (change.quotaBytes !== undefined) {
      await client.query('UPDATE workspaces SET quota_bytes = $2 WHERE id = $1', [
        workspaceId,
        change.quotaBytes,
      ]);
      after.quotaBytes = change.quotaBytes;
      await audit(
        'workspace.quota',
        { quotaBytes: before.quotaBytes },
        { quotaBytes: after.quotaBytes },
      );
    }
    if (change.activeJobCap !== undefined) {
      await client.query('UPDATE workspaces SET active_job_cap = $2 WHERE id = $1', [
        workspaceId,
        change.activeJobCap,
      ]);
      after.activeJobCap = change.activeJobCap;
      await audit(
        'workspace.job_cap',
        { activeJobCap: before.activeJobCap },
        { activeJobCap: after.activeJobCap },
      );
      // Once committed, the dispatcher admits whatever the new cap leaves room for.
      afterCommit(client, wakeSlotDispatchers);
    }
    if (providers !== undefined) {
      await client.query('UPDATE workspaces SET enabled_providers = $2 WHERE id = $1', [
        workspaceId,
        providers,
      ]);
      after.enabledProviders = providers;
      await audit(
        'workspace.providers',
        { enabledProviders: before.enabledProviders },
        { enabledProviders: after.enabledProviders },
      );
    }
    return after;
  });
}

export async function getInstallationControls(db: Queryable): Promise<InstallationControls> {
  return {
    dailyBudgetMicros: await readCountSetting(db, SETTINGS.globalDailyBudgetMicros),
    quotaBytes: await readCountSetting(db, SETTINGS.globalQuotaBytes),
  };
}

async function setGlobalQuota(client: PoolClient, bytes: number | null): Promise<void> {
  await writeCountSetting(client, SETTINGS.globalQuotaBytes, bytes);
}

/** Changes the global budget and quota; each field given is an audit row. */
export async function setInstallationControls(
  pool: Pool,
  actor: AuditActor,
  change: Partial<InstallationControls>,
): Promise<InstallationControls> {
  if (change.dailyBudgetMicros !== undefined) {
    checkCount('dailyBudgetMicros', change.dailyBudgetMicros, 0, Number.MAX_SAFE_INTEGER);
  }
  if (change.quotaBytes !== undefined) {
    checkCount('quotaBytes', change.quotaBytes, 0, Number.MAX_SAFE_INTEGER);
  }
  return withTransaction(pool, async (client) => {
    // Settings rows may not exist yet: one lock orders concurrent operators' before/after.
    await client.query('SELECT pg_advisory_xact_lock($1, 0)', [INSTALLATION_LOCK_CLASS]);
    const before = await getInstallationControls(client);
    const after = { ...before };
    const audit = (action: AuditEntryInput['action'], from: unknown, to: unknown) =>
      recordAudit(client, actor, {
        action,
        target: 'installation',
        workspaceId: null,
        before: from,
        after: to,
      });
    if (change.dailyBudgetMicros !== undefined) {
      await setGlobalBudget(client, change.dailyBudgetMicros);
      after.dailyBudgetMicros = change.dailyBudgetMicros;
      await audit(
        'installation.daily_budget',
        { dailyBudgetMicros: before.dailyBudgetMicros },
        { dailyBudgetMicros: after.dailyBudgetMicros },
      );
    }
    if (change.quotaBytes !== undefined) {
      await setGlobalQuota(client, change.quotaBytes);
      after.quotaBytes = change.quotaBytes;
      await audit(
        'installation.quota',
        { quotaBytes: before.quotaBytes },
        { quotaBytes: after.quotaBytes },
      );
    }
    return after;
  });
}

export interface WorkspaceOverview {
  id: number;
  name: string;
  controls: WorkspaceControls;
  spentTodayMicros: number;
  storedBytes: number;
  /** Jobs holding a slot (admitted and active) and jobs waiting for one (M4). */
  activeJobs: number;
  waitingJobs: number;
}

export interface InstallationOverview {
  day: string;
  resetsAt: Date;
  controls: InstallationControls;
  /** The quota in force: the operator's setting, else the configured fallback. */
  effectiveQuotaBytes: number | null;
  spentTodayMicros: number;
  storedBytes: number;
  workspaces: WorkspaceOverview[];
}

/** M1: figures across workspaces, for operators only. */
export async function installationOverview(
  db: Queryable,
  now: Date,
  configuredQuotaBytes: number | null,
): Promise<InstallationOverview> {
  const { start, end } = utcDayBounds(now);
  const [controls, workspaces, spend, usage, slots] = await Promise.all([
    getInstallationControls(db),
    db.query(`SELECT id, name, ${CONTROL_COLUMNS} FROM workspaces ORDER BY id`),
    db.query(
      `SELECT workspace_id, coalesce(sum(cost_micros), 0)::bigint AS spent FROM provider_calls
        WHERE occurred_at >= $1 AND occurred_at < $2 GROUP BY workspace_id`,
      [start, end],
    ),
    blobUsage(db, now),
    slotFigures(db),
  ]);
  const spentBy = new Map(spend.rows.map((r) => [r.workspace_id as number, Number(r.spent)]));
  const bytesBy = new Map(usage.workspaces.map((w) => [w.workspaceId, w.bytes]));
  return {
    day: start.toISOString().slice(0, 10),
    resetsAt: end,
    controls,
    effectiveQuotaBytes: controls.quotaBytes ?? configuredQuotaBytes,
    spentTodayMicros: [...spentBy.values()].reduce((a, b) => a + b, 0),
    storedBytes: usage.totalBytes,
    workspaces: workspaces.rows.map((r) => ({
      id: r.id,
      name: r.name,
      controls: workspaceControlsOf(r),
      spentTodayMicros: spentBy.get(r.id) ?? 0,
      storedBytes: bytesBy.get(r.id) ?? 0,
      activeJobs: slots.get(r.id)?.holding ?? 0,
      waitingJobs: slots.get(r.id)?.waiting ?? 0,
    })),
  };
}

/** B1/M1: today's spend per provider across every workspace (operators only). */
export async function providerSpendToday(
  db: Queryable,
  now: Date,
): Promise<Array<{ provider: string; spentMicros: number; calls: number }>> {
  const { start, end } = utcDayBounds(now);
  const { rows } = await db.query(
    `SELECT provider, coalesce(sum(cost_micros), 0)::bigint AS spent, count(*)::int AS calls
       FROM provider_calls WHERE occurred_at >= $1 AND occurred_at < $2
      GROUP BY provider ORDER BY spent DESC, provider`,
    [start, end],
  );
  return rows.map((r) => ({ provider: r.provider, spentMicros: Number(r.spent), calls: r.calls }));
}

/**
 * M4: a provider's Resume with its audit row: the queue state before and after, and how many
 * waiting workflows were woken. `resume` is the typed client's resume (the database, then the
 * signals); the row is written once it has taken effect. `workspaceId` is the workspace whose
 * key resumed, null for operators and the CLI.
 */
export async function resumeProviderRecorded(
  pool: Pool,
  actor: AuditActor,
  workspaceId: number | null,
  provider: string,
  resume: () => Promise<{ resumed: boolean; woken: number }>,
): Promise<{ resumed: boolean; woken: number }> {
  const stateOf = async () => {
    // A workspace's resume concerns its own pause; an operator's (no workspace), the shared one.
    const state = (await getProviderStates(pool, workspaceId ?? undefined)).find(
      (s) => s.provider === provider && s.workspace_id === workspaceId,
    );
    return { status: state?.status ?? 'active', reason: state?.reason ?? null };
  };
  const before = await stateOf();
  const result = await resume();
  await recordAudit(pool, actor, {
    action: 'provider.resume',
    target: `providers/${provider}`,
    workspaceId,
    before,
    after: { ...(await stateOf()), woken: result.woken },
  });
  return result;
}
