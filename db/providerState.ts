import { backoffCeilingMs } from '../core/backoff';
import { EVENT_TYPES } from '../core/cloudevents';
import type { FailureClass, PauseReason } from '../core/failures';
import { appendEvent } from './events';
import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';
import { ACTIVE_STATUS_LIST } from './sql';

/**
 * Provider state (Q3, Q4, M3): whether a provider's queue is paused, why, until when, and which
 * pause episode was last notified. A pause is entered by a running attempt's pausing failure
 * (`pauseProvider` in db/attempts.ts, which closes the attempt in the same transaction) and
 * left by its own timer or a Resume.
 *
 * Each row has a key, `workspaceId`: null for a provider on the installation's shared
 * credentials (its pause holds every workspace), a workspace's id for a provider on each
 * workspace's own credentials (its pause holds that workspace alone); core/providerCatalogue's
 * `pauseKey` decides which.
 *
 * Pause and resume events are written once for the installation (no workspace, for operators)
 * and once for each workspace they affect: the workspace of a workspace-keyed pause, or every
 * workspace with active jobs on the provider, so their webhooks and streams carry them.
 */

/** Null: the installation's row; a number: that workspace's row. */
export type PauseKey = number | null;

/** Outage pauses last 1, 2, 4 ... 60 minutes, unless the provider says otherwise. */
const OUTAGE_BASE_MS = 60_000;
const OUTAGE_MAX_MS = 60 * 60_000;

export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

/**
 * Pauses a provider's queue in the caller's transaction and opens a new episode; an already
 * paused provider keeps its episode and its resume time. An attempt's pausing failure pauses
 * through `pauseProvider` (db/attempts.ts), which closes the attempt beside it.
 */
export async function pauseQueue(
  client: PoolClient,
  provider: string,
  reason: PauseReason,
  retryAfterMs: number | undefined,
  now: Date,
  key: PauseKey = null,
) {
  await client.query(
    `INSERT INTO provider_state (provider, workspace_id) VALUES ($1, $2)
     ON CONFLICT (provider, workspace_id) DO NOTHING`,
    [provider, key],
  );
  const { rows } = await client.query(
    `SELECT status, reason, resume_at, episode, outage_step FROM provider_state
      WHERE provider = $1 AND workspace_id IS NOT DISTINCT FROM $2 FOR UPDATE`,
    [provider, key],
  );
  const state = rows[0];
  if (state.status === 'paused') {
    return {
      resumeAt: state.resume_at as Date | null,
      episode: state.episode as number,
      newEpisode: false,
    };
  }
  let resumeAt: Date | null = null;
  let outageStep = state.outage_step as number;
  if (reason === 'outage') {
    // 1, 2, 4 ... 60 minutes, or the provider's own Retry-After.
    const backoff = backoffCeilingMs(outageStep, OUTAGE_BASE_MS, OUTAGE_MAX_MS);
    resumeAt = new Date(now.getTime() + (retryAfterMs ?? backoff));
    outageStep += 1;
  } else if (reason === 'budget') {
    resumeAt = nextUtcMidnight(now);
  }
  const episode = (state.episode as number) + 1;
  await client.query(
    `UPDATE provider_state SET status = 'paused', reason = $3, paused_at = $4, resume_at = $5, episode = $6,
            outage_step = $7, updated_at = now()
      WHERE provider = $1 AND workspace_id IS NOT DISTINCT FROM $2`,
    [provider, key, reason, now, resumeAt, episode, outageStep],
  );
  await appendProviderEvent(client, provider, key, EVENT_TYPES.providerPaused, {
    provider,
    reason,
    resumeAt: resumeAt?.toISOString() ?? null,
    episode,
  });
  return { resumeAt, episode, newEpisode: true };
}

/**
 * Resumes the paused rows of a provider: the row of `key` when given, every row of the
 * provider (the installation's and each workspace's) when `key` is undefined.
 */
async function resumeQueue(
  client: PoolClient,
  provider: string,
  by: 'operator' | 'workspace' | 'timer',
  key?: PauseKey,
): Promise<boolean> {
  const updated = await client.query<{ workspace_id: number | null; episode: number }>(
    `UPDATE provider_state SET status = 'active', reason = NULL, resume_at = NULL, updated_at = now()
      WHERE provider = $1 AND status = 'paused'
        AND ($2::boolean OR workspace_id IS NOT DISTINCT FROM $3)
      RETURNING workspace_id, episode`,
    [provider, key === undefined, key ?? null],
  );
  for (const row of updated.rows) {
    await appendProviderEvent(client, provider, row.workspace_id, EVENT_TYPES.providerResumed, {
      provider,
      episode: row.episode,
      by,
    });
  }
  return (updated.rowCount ?? 0) > 0;
}

/**
 * Writes a pause or resume event where it is seen: the workspace of a workspace-keyed row; for
 * the installation's row, one event without a workspace (operators) and one for each workspace
 * with active jobs on the provider (as main or polish provider), whose webhooks and streams
 * would otherwise never hear why their jobs wait.
 */
async function appendProviderEvent(
  client: PoolClient,
  provider: string,
  key: PauseKey,
  type: string,
  data: Record<string, unknown>,
): Promise<void> {
  const subject = `providers/${provider}`;
  if (key !== null) {
    await appendEvent(client, { workspaceId: key, type, subject, data });
    return;
  }
  await appendEvent(client, { workspaceId: null, type, subject, data });
  for (const workspaceId of await workspacesWaitingOn(client, provider)) {
    await appendEvent(client, { workspaceId, type, subject, data });
  }
}

/** Workspaces with active jobs that use the provider, as main or as polish provider. */
async function workspacesWaitingOn(db: Queryable, provider: string): Promise<number[]> {
  const { rows } = await db.query<{ workspace_id: number }>(
    `SELECT DISTINCT workspace_id FROM transcription_jobs
      WHERE status IN ${ACTIVE_STATUS_LIST}
        AND (provider = $1 OR snapshot->'options'->>'polishProvider' = $1)
      ORDER BY workspace_id`,
    [provider],
  );
  return rows.map((r) => Number(r.workspace_id));
}

/**
 * Q3, M3: a Resume. `key` undefined (operators): every paused row of the provider; a number
 * (a workspace): that workspace's own row only. Returns false when nothing was paused.
 */
export async function resumeProvider(
  pool: Pool,
  provider: string,
  key?: PauseKey,
): Promise<boolean> {
  return withTransaction(pool, (client) =>
    resumeQueue(client, provider, typeof key === 'number' ? 'workspace' : 'operator', key),
  );
}

/**
 * Marks the first pause of an episode as notified; true only for the one caller that should
 * send the notification (Q4: once per episode).
 */
export async function claimPauseNotification(
  pool: Pool,
  provider: string,
  episode: number,
  key: PauseKey = null,
): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE provider_state SET notified_episode = $2
      WHERE provider = $1 AND workspace_id IS NOT DISTINCT FROM $3 AND notified_episode < $2`,
    [provider, episode, key],
  );
  return rowCount === 1;
}

export interface ProviderStateRow {
  provider: string;
  /** Null: the installation's shared credentials; else the workspace whose own they are. */
  workspace_id: number | null;
  status: 'active' | 'paused';
  reason: string | null;
  paused_at: Date | null;
  resume_at: Date | null;
  episode: number;
}

/**
 * Provider queue states. With a workspace: the installation's rows and that workspace's own
 * (its share, M1); without: every row (operators).
 */
export async function getProviderStates(
  db: Queryable,
  workspaceId?: number,
): Promise<ProviderStateRow[]> {
  const { rows } = await db.query(
    `SELECT provider, workspace_id, status, reason, paused_at, resume_at, episode FROM provider_state
      WHERE $1::bigint IS NULL OR workspace_id IS NULL OR workspace_id = $1
      ORDER BY provider, workspace_id NULLS FIRST`,
    [workspaceId ?? null],
  );
  return rows.map((r) => ({
    ...r,
    workspace_id: r.workspace_id === null ? null : Number(r.workspace_id),
  })) as ProviderStateRow[];
}

/**
 * The pause that holds a provider's queue for a job of `workspaceId` now, if any: the
 * installation's row or the workspace's own. A pause that ran its course (outage backoff,
 * budget midnight) is ended here, in the caller's transaction, and the queue opens.
 */
export async function currentPause(
  client: PoolClient,
  provider: string,
  now: Date,
  workspaceId: number | null = null,
): Promise<{ reason: FailureClass; resumeAt: Date | null } | null> {
  const { rows } = await client.query(
    `SELECT workspace_id, reason, resume_at FROM provider_state
      WHERE provider = $1 AND status = 'paused' AND (workspace_id IS NULL OR workspace_id = $2)
      ORDER BY workspace_id NULLS FIRST`,
    [provider, workspaceId],
  );
  for (const row of rows) {
    const resumeAt: Date | null = row.resume_at;
    if (resumeAt === null || resumeAt > now) return { reason: row.reason, resumeAt };
    const key = row.workspace_id === null ? null : Number(row.workspace_id);
    await resumeQueue(client, provider, 'timer', key);
  }
  return null;
}

/** A committed job shows the provider answers again: the next outage backs off from 1 min. */
export async function resetOutageBackoff(
  client: PoolClient,
  provider: string,
  workspaceId: number | null = null,
): Promise<void> {
  await client.query(
    `UPDATE provider_state SET outage_step = 0
      WHERE provider = $1 AND (workspace_id IS NULL OR workspace_id = $2) AND outage_step > 0`,
    [provider, workspaceId],
  );
}
