import type { FailureClass, PauseReason } from '../core/failures';
import { appendEvent } from './events';
import { EVENT_TYPES } from './jobs';
import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';

/**
 * Provider state (Q3, Q4): whether a provider's queue is paused, why, until when, and which
 * pause episode was last notified. A pause is entered by a running attempt's pausing failure
 * (`pauseProvider` in db/attempts.ts, which closes the attempt in the same transaction) and
 * left by its own timer or an operator's Resume.
 */

/** The longest outage pause: 1, 2, 4 ... 60 minutes, unless the provider says otherwise. */
const OUTAGE_MAX_MS = 60 * 60_000;

export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

/**
 * Pauses a provider's queue in the caller's transaction and opens a new episode; an already
 * paused provider keeps its episode and its resume time.
 */
export async function pauseProviderIn(
  client: PoolClient,
  provider: string,
  reason: PauseReason,
  retryAfterMs: number | undefined,
  now: Date,
) {
  await client.query(
    `INSERT INTO provider_state (provider) VALUES ($1) ON CONFLICT (provider) DO NOTHING`,
    [provider],
  );
  const { rows } = await client.query(
    `SELECT status, reason, resume_at, episode, outage_step FROM provider_state WHERE provider = $1 FOR UPDATE`,
    [provider],
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
    const backoff = Math.min(OUTAGE_MAX_MS, 60_000 * 2 ** outageStep);
    resumeAt = new Date(now.getTime() + (retryAfterMs ?? backoff));
    outageStep += 1;
  } else if (reason === 'budget') {
    resumeAt = nextUtcMidnight(now);
  }
  const episode = (state.episode as number) + 1;
  await client.query(
    `UPDATE provider_state SET status = 'paused', reason = $2, paused_at = $3, resume_at = $4, episode = $5,
            outage_step = $6, updated_at = now()
      WHERE provider = $1`,
    [provider, reason, now, resumeAt, episode, outageStep],
  );
  await appendEvent(client, {
    workspaceId: null,
    type: EVENT_TYPES.providerPaused,
    subject: `providers/${provider}`,
    data: { provider, reason, resumeAt: resumeAt?.toISOString() ?? null, episode },
  });
  return { resumeAt, episode, newEpisode: true };
}

async function resumeProviderIn(
  client: PoolClient,
  provider: string,
  by: 'operator' | 'timer',
): Promise<boolean> {
  const updated = await client.query(
    `UPDATE provider_state SET status = 'active', reason = NULL, resume_at = NULL, updated_at = now()
      WHERE provider = $1 AND status = 'paused' RETURNING episode`,
    [provider],
  );
  if (updated.rowCount === 0) return false;
  await appendEvent(client, {
    workspaceId: null,
    type: EVENT_TYPES.providerResumed,
    subject: `providers/${provider}`,
    data: { provider, episode: updated.rows[0].episode, by },
  });
  return true;
}

/** Q3: an operator's Resume. Returns false when the provider was not paused. */
export async function resumeProvider(pool: Pool, provider: string): Promise<boolean> {
  return withTransaction(pool, (client) => resumeProviderIn(client, provider, 'operator'));
}

/**
 * Marks the first pause of an episode as notified; true only for the one caller that should
 * send the notification (Q4: once per episode).
 */
export async function claimPauseNotification(
  pool: Pool,
  provider: string,
  episode: number,
): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE provider_state SET notified_episode = $2 WHERE provider = $1 AND notified_episode < $2`,
    [provider, episode],
  );
  return rowCount === 1;
}

export async function getProviderStates(db: Queryable) {
  const { rows } = await db.query(
    `SELECT provider, status, reason, paused_at, resume_at, episode FROM provider_state ORDER BY provider`,
  );
  return rows as Array<{
    provider: string;
    status: 'active' | 'paused';
    reason: string | null;
    paused_at: Date | null;
    resume_at: Date | null;
    episode: number;
  }>;
}

/**
 * The pause that holds a provider's queue now, if any. A pause that ran its course (outage
 * backoff, budget midnight) is ended here, in the caller's transaction, and the queue opens.
 */
export async function currentPause(
  client: PoolClient,
  provider: string,
  now: Date,
): Promise<{ reason: FailureClass; resumeAt: Date | null } | null> {
  const { rows } = await client.query(
    `SELECT reason, resume_at FROM provider_state WHERE provider = $1 AND status = 'paused'`,
    [provider],
  );
  if (!rows[0]) return null;
  const resumeAt: Date | null = rows[0].resume_at;
  if (resumeAt === null || resumeAt > now) return { reason: rows[0].reason, resumeAt };
  await resumeProviderIn(client, provider, 'timer');
  return null;
}

/** A committed job shows the provider answers again: the next outage backs off from 1 min. */
export async function resetOutageBackoff(client: PoolClient, provider: string): Promise<void> {
  await client.query(
    `UPDATE provider_state SET outage_step = 0 WHERE provider = $1 AND outage_step > 0`,
    [provider],
  );
}
