import { EVENT_TYPES } from '../core/cloudevents';
import type { FailureClass, PauseReason } from '../core/failures';
import { polishProviderOf } from '../core/jobOptions';
import type { MediaKind } from '../core/media';
import type { JobSnapshot } from '../core/provider';
import { pauseKey } from '../core/providerCatalogue';
import { isActiveStatus } from '../core/temporal';
import { workspaceBudgetPause } from './budget';
import { appendEvent } from './events';
import {
  type AttemptFence,
  lockRunningAttempt,
  type RunningAttempt,
  updateRunningAttempt,
} from './fence';
import { jobsEnded } from './jobEnds';
import { failJob, jobEventData } from './jobs';
import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';
import { currentPause, nextUtcMidnight, pauseQueue } from './providerState';
import { ACTIVE_STATUS_LIST } from './sql';

/**
 * Attempts (A1, A2): the claim, progress, close, pause and the transient previews of a
 * running attempt. Every write of a running attempt is fenced (db/fence.ts); the commit that
 * completes one is db/commit.ts, checkpoints db/checkpoints.ts, a provider's pause state
 * db/providerState.ts.
 */

export type ClaimResult =
  | {
      state: 'claimed';
      attemptNumber: number;
      workspaceId: number;
      pageId: number;
      kind: MediaKind;
      snapshot: JobSnapshot;
      inputRevision: number;
      /** Charged attempts so far, this one included. */
      chargedAttempts: number;
    }
  | {
      state: 'inactive';
      status: string;
      /** The revision a completed job committed (a claim after a commit whose report was lost). */
      revision?: number | null;
    }
  | { state: 'paused'; reason: FailureClass; resumeAt: Date | null }
  | { state: 'exhausted'; category: FailureClass };

/**
 * A1: claims the next attempt of a job in one transaction. A previous attempt still
 * `running` belonged to a worker that stopped heartbeating: it is closed `lease_expired`
 * (category `crashed`, charged). A paused provider claims nothing. Exhausted attempts fail
 * the job with the last attempt's category (J3).
 */
export async function claimAttempt(
  pool: Pool,
  args: {
    jobId: string;
    owner: string;
    tokenHash: Buffer;
    maxAttempts: number;
    now?: Date;
    /**
     * D7: the attempt the claiming workflow run last held (null: none yet). A running attempt
     * after it is one this run never heard of: an earlier try of this same claim committed
     * while its report was lost to an outage (Temporal or PostgreSQL away), or the run that
     * held it was lost (D4). It is closed refunded, never charged. Unset: every running
     * attempt is a crashed lease (runs begun before D7).
     */
    knownAttempt?: number | null;
  },
): Promise<ClaimResult> {
  return withTransaction(pool, async (client) => {
    const jobs = await client.query(
      `SELECT j.id, j.status, j.workspace_id, j.page_id, j.provider, j.snapshot, j.input_revision, j.last_attempt_number,
              j.result_revision,
              p.kind
         FROM transcription_jobs j JOIN pages p ON p.id = j.page_id WHERE j.id = $1 FOR UPDATE OF j`,
      [args.jobId],
    );
    const job = jobs.rows[0];
    if (!job) return { state: 'inactive', status: 'missing' };
    if (!isActiveStatus(job.status))
      return { state: 'inactive', status: job.status, revision: job.result_revision };

    // M3: a job waits while any provider it calls is paused for it: its own, and the provider
    // its options name for polish.
    for (const provider of jobProviders(job.snapshot as JobSnapshot)) {
      const paused = await currentPause(client, provider, args.now ?? new Date(), job.workspace_id);
      if (paused) return { state: 'paused', ...paused };
    }
    // B1: a paid job of a workspace whose own budget is spent claims nothing until it
    // resets: no attempt, ledger row or event is written for it at each re-check. Free
    // engines never wait on a budget.
    const paid = Object.values((job.snapshot as JobSnapshot).price ?? {}).some((p) => (p ?? 0) > 0);
    const budget = paid
      ? await workspaceBudgetPause(client, job.workspace_id, args.now ?? new Date())
      : null;
    if (budget) return { state: 'paused', ...budget };

    if (args.knownAttempt !== undefined)
      await refundUnheardAttempt(client, args.jobId, args.knownAttempt ?? 0);
    await expireRunningAttempt(client, args.jobId, 'worker stopped heartbeating');
    const charged = await chargedAttempts(client, args.jobId);
    if (charged >= args.maxAttempts) {
      const last = await client.query(
        `SELECT error_category FROM transcription_job_attempts WHERE job_id = $1 AND NOT refunded
          ORDER BY attempt_number DESC LIMIT 1`,
        [args.jobId],
      );
      const category: FailureClass = last.rows[0]?.error_category ?? 'internal';
      await failJob(
        client,
        args.jobId,
        category,
        `attempts exhausted (${charged} of ${args.maxAttempts})`,
        null,
      );
      return { state: 'exhausted', category };
    }

    const attemptNumber = job.last_attempt_number + 1;
    await client.query(
      `INSERT INTO transcription_job_attempts (job_id, attempt_number, snapshot, input_revision, owner, token_hash)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        args.jobId,
        attemptNumber,
        JSON.stringify(job.snapshot),
        job.input_revision,
        args.owner,
        args.tokenHash,
      ],
    );
    await client.query(
      `UPDATE transcription_jobs SET status = 'running', last_attempt_number = $2, updated_at = now() WHERE id = $1`,
      [args.jobId, attemptNumber],
    );
    return {
      state: 'claimed',
      attemptNumber,
      workspaceId: job.workspace_id,
      pageId: job.page_id,
      kind: job.kind,
      snapshot: job.snapshot,
      inputRevision: job.input_revision,
      chargedAttempts: charged + 1,
    };
  });
}

/**
 * A1: closes the job's attempt that is still `running` although nothing drives it (its worker
 * stopped heartbeating, or its workflow ended) as a crashed lease: charged, and its token dead.
 * The caller holds the job row.
 */
export async function expireRunningAttempt(
  client: PoolClient,
  jobId: string,
  detail: string,
): Promise<void> {
  await client.query(
    `UPDATE transcription_job_attempts SET outcome = 'lease_expired', error_category = 'crashed',
            error_detail = $2, ended_at = now()
      WHERE job_id = $1 AND outcome = 'running'`,
    [jobId, detail],
  );
}

/**
 * D7: closes a running attempt numbered after `knownAttempt`, which the claiming workflow run
 * never heard of, as refunded: the outage that lost its report is not the job's fault.
 */
async function refundUnheardAttempt(
  client: PoolClient,
  jobId: string,
  knownAttempt: number,
): Promise<void> {
  await client.query(
    `UPDATE transcription_job_attempts SET outcome = 'retryable_failed', refunded = true,
            error_category = 'crashed', ended_at = now(),
            error_detail = 'claimed while Quire infrastructure was away; its workflow never heard of it (refunded)'
      WHERE job_id = $1 AND outcome = 'running' AND attempt_number > $2`,
    [jobId, knownAttempt],
  );
}

/** The providers a job calls: its own, then its polish provider when another. */
function jobProviders(snapshot: JobSnapshot): string[] {
  const polish = polishProviderOf(snapshot.options);
  return polish && polish !== snapshot.provider ? [snapshot.provider, polish] : [snapshot.provider];
}

async function chargedAttempts(db: Queryable, jobId: string): Promise<number> {
  const { rows } = await db.query(
    `SELECT count(*)::int AS n FROM transcription_job_attempts WHERE job_id = $1 AND NOT refunded`,
    [jobId],
  );
  return rows[0].n;
}

/** Records the stage and live counts of a running attempt (fenced). */
export async function recordProgress(
  pool: Pool,
  fence: AttemptFence,
  progress: { stage: string; completed?: number; failed?: number; total?: number | null },
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await lockRunningAttempt(client, fence, 'SHARE');
    await client.query(
      `UPDATE transcription_jobs SET stage = $2, completed_segments = coalesce($3, completed_segments),
              failed_segments = coalesce($4, failed_segments), total_segments = coalesce($5, total_segments),
              updated_at = now()
        WHERE id = $1 AND status = 'running'`,
      [
        fence.jobId,
        progress.stage,
        progress.completed ?? null,
        progress.failed ?? null,
        progress.total ?? null,
      ],
    );
  });
}

export interface AttemptClose {
  outcome: 'retryable_failed' | 'failed' | 'canceled';
  category: FailureClass | null;
  detail: string | null;
  refunded?: boolean;
  counts?: { completed: number; failed: number; total: number | null };
}

/**
 * Closes a running attempt without a commit, in the caller's transaction, which holds the
 * attempt locked for update (`lockRunningAttempt`). `failed` also fails the job; a charged
 * `retryable_failed` that used the last allowed attempt (`maxAttempts`) fails the job too
 * (J3). Returns the job's status afterwards.
 */
export async function closeAttempt(
  client: PoolClient,
  fence: AttemptFence,
  close: AttemptClose,
  maxAttempts: number,
): Promise<{ jobStatus: string }> {
  await endAttempt(client, fence, close);
  if (close.outcome === 'failed') {
    await failJob(
      client,
      fence.jobId,
      close.category ?? 'internal',
      close.detail ?? '',
      fence.attemptNumber,
    );
  } else if (close.outcome === 'retryable_failed' && !close.refunded) {
    const charged = await chargedAttempts(client, fence.jobId);
    if (charged >= maxAttempts) {
      await failJob(
        client,
        fence.jobId,
        close.category ?? 'internal',
        `attempts exhausted (${charged} of ${maxAttempts})`,
        fence.attemptNumber,
      );
    }
  } else if (close.outcome === 'canceled') {
    const canceled = await client.query(
      `UPDATE transcription_jobs SET status = 'canceled', ended_at = now(), updated_at = now(), stage = 'done'
        WHERE id = $1 AND status IN ${ACTIVE_STATUS_LIST}`,
      [fence.jobId],
    );
    if (canceled.rowCount === 1) await jobsEnded(client, [fence.jobId]);
  }
  const { rows } = await client.query('SELECT status FROM transcription_jobs WHERE id = $1', [
    fence.jobId,
  ]);
  return { jobStatus: rows[0].status };
}

/** The attempt row of a close (fenced: a miss is a `StaleAttemptError`). */
async function endAttempt(client: PoolClient, fence: AttemptFence, close: AttemptClose) {
  await updateRunningAttempt(
    client,
    fence,
    `outcome = $4, error_category = $5, error_detail = $6, refunded = $7, ended_at = now(),
     completed_segments = $8, failed_segments = $9, total_segments = $10`,
    [
      close.outcome,
      close.category,
      close.detail,
      close.refunded ?? false,
      close.counts?.completed ?? 0,
      close.counts?.failed ?? 0,
      close.counts?.total ?? null,
    ],
  );
}

/**
 * Q3: a pausing failure, in the caller's transaction, which holds the attempt locked for
 * update (`attempt`): the attempt closes `retryable_failed`, refunded (it does not count),
 * and the provider's queue pauses; an already paused provider keeps its episode. Returns
 * when the queue may open again (null: only an operator's Resume).
 */
export async function pauseProvider(
  client: PoolClient,
  fence: AttemptFence,
  attempt: RunningAttempt,
  args: {
    provider: string;
    reason: PauseReason;
    detail: string;
    retryAfterMs?: number;
    counts?: { completed: number; failed: number; total: number | null };
    /** `workspace`: a workspace's own budget is spent; the provider stays open for others. */
    scope?: 'provider' | 'workspace';
    now?: Date;
  },
): Promise<{ resumeAt: Date | null; episode: number; newEpisode: boolean }> {
  await endAttempt(client, fence, {
    outcome: 'retryable_failed',
    category: args.reason,
    detail: args.detail,
    refunded: true,
    counts: args.counts,
  });
  await client.query(
    `UPDATE transcription_jobs SET status = 'pending', stage = 'paused', updated_at = now()
        WHERE id = $1 AND status = 'running'`,
    [fence.jobId],
  );
  const now = args.now ?? new Date();
  if (args.scope === 'workspace') {
    const resumeAt = args.retryAfterMs
      ? new Date(now.getTime() + args.retryAfterMs)
      : nextUtcMidnight(now);
    if (args.reason === 'budget') {
      // Remembered, so that the workspace's next claims wait without an attempt each.
      await client.query(
        `UPDATE workspaces SET budget_paused_until = greatest(budget_paused_until, $2)
            WHERE id = (SELECT workspace_id FROM transcription_jobs WHERE id = $1)`,
        [fence.jobId, resumeAt],
      );
    }
    return { resumeAt, episode: 0, newEpisode: false };
  }
  // M3: shared credentials pause the installation, a workspace's own only that workspace.
  const key = pauseKey(args.provider, Number(attempt.workspace_id));
  return pauseQueue(client, args.provider, args.reason, args.retryAfterMs, now, key);
}

/**
 * E1: the transient previews of a running attempt (`task.started`, `task.completed`),
 * fenced like every other write, so a stale attempt cannot show progress it no longer owns;
 * each carries the attempt number so clients can tell a retry's previews apart.
 */
export async function appendTaskEvent(
  pool: Pool,
  fence: AttemptFence,
  type: 'started' | 'completed',
  extra: Record<string, unknown>,
): Promise<number> {
  return withTransaction(pool, async (client) => {
    await lockRunningAttempt(client, fence, 'SHARE');
    const { workspaceId, data } = await jobEventData(client, fence.jobId, {
      attemptNumber: fence.attemptNumber,
      ...extra,
    });
    return appendEvent(client, {
      workspaceId,
      type: type === 'started' ? EVENT_TYPES.taskStarted : EVENT_TYPES.taskCompleted,
      subject: `transcription-jobs/${fence.jobId}`,
      data,
    });
  });
}
