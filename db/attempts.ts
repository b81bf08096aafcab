import {
  type AnnotationPage,
  buildAnnotationPage,
  plainText,
  type Segment,
} from '../core/annotation';
import { type FailureClass, type PauseReason, StaleAttemptError } from '../core/failures';
import { polishProviderOf } from '../core/jobOptions';
import type { MediaKind } from '../core/media';
import type { EngineIdentity, JobSnapshot } from '../core/provider';
import { pauseKey } from '../core/providerCatalogue';
import { isActiveStatus } from '../core/temporal';
import { workspaceBudgetPause } from './budget';
import { appendEvent } from './events';
import { EVENT_TYPES, failJobIn, jobEventData } from './jobs';
import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';
import {
  currentPause,
  nextUtcMidnight,
  pauseProviderIn,
  resetOutageBackoff,
} from './providerState';
import { ACTIVE_STATUS_LIST } from './sql';

/**
 * Attempts (A1, A2) and the commit (J1); checkpoints live in db/checkpoints.ts, a provider's
 * pause state in db/providerState.ts. Every write of a running attempt is fenced: it locks
 * the attempt row `WHERE token_hash = $hash AND outcome = 'running'` in the same
 * transaction, and a miss is a `StaleAttemptError`. The lock also orders the write against a
 * concurrent claim, cancel or supersede: whichever commits first wins, and the loser sees
 * the attempt closed.
 */
export interface AttemptFence {
  jobId: string;
  attemptNumber: number;
  tokenHash: Buffer;
}

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
  | { state: 'inactive'; status: string }
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
  args: { jobId: string; owner: string; tokenHash: Buffer; maxAttempts: number; now?: Date },
): Promise<ClaimResult> {
  return withTransaction(pool, async (client) => {
    const jobs = await client.query(
      `SELECT j.id, j.status, j.workspace_id, j.page_id, j.provider, j.snapshot, j.input_revision, j.last_attempt_number,
              p.kind
         FROM transcription_jobs j JOIN pages p ON p.id = j.page_id WHERE j.id = $1 FOR UPDATE OF j`,
      [args.jobId],
    );
    const job = jobs.rows[0];
    if (!job) return { state: 'inactive', status: 'missing' };
    if (!isActiveStatus(job.status)) return { state: 'inactive', status: job.status };

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

    await client.query(
      `UPDATE transcription_job_attempts SET outcome = 'lease_expired', error_category = 'crashed',
              error_detail = 'worker stopped heartbeating', ended_at = now()
        WHERE job_id = $1 AND outcome = 'running'`,
      [args.jobId],
    );
    const charged = await chargedAttempts(client, args.jobId);
    if (charged >= args.maxAttempts) {
      const last = await client.query(
        `SELECT error_category FROM transcription_job_attempts WHERE job_id = $1 AND NOT refunded
          ORDER BY attempt_number DESC LIMIT 1`,
        [args.jobId],
      );
      const category: FailureClass = last.rows[0]?.error_category ?? 'internal';
      await failJobIn(
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

/**
 * Locks the running attempt named by the fence, or throws `StaleAttemptError`.
 * Lock order, everywhere: page, then job, then attempt. Supersede (page, job, attempt),
 * cancel (job, attempt) and commit (page, job, attempt) therefore never deadlock.
 */
export async function lockRunningAttempt(
  client: PoolClient,
  fence: AttemptFence,
  mode: 'SHARE' | 'UPDATE',
  options: { lockPage?: boolean } = {},
) {
  if (options.lockPage) {
    await client.query(
      `SELECT 1 FROM pages WHERE id = (SELECT page_id FROM transcription_jobs WHERE id = $1) FOR UPDATE`,
      [fence.jobId],
    );
  }
  await client.query('SELECT 1 FROM transcription_jobs WHERE id = $1 FOR UPDATE', [fence.jobId]);
  return runningAttemptRow(client, fence, mode);
}

/**
 * The same lock order for writes made in one statement (the line checkpoint of the hot
 * path): CTEs `job` (the job row, `FOR KEY SHARE`) and `fence` (the running attempt,
 * `FOR SHARE`), with $1 job id, $2 attempt number, $3 token hash. The attempt is read
 * through the job, so the job row is locked first: a cancel, claim or supersede holding the
 * job waits for the statement or makes it wait, and never holds the attempt it needs.
 * (Locked the other way round, a line checkpoint and a batch cancel deadlocked.)
 */
export const FENCE_JOB_THEN_ATTEMPT = `job AS (
       SELECT id FROM transcription_jobs WHERE id = $1 FOR KEY SHARE),
     fence AS (
       SELECT a.job_id FROM job JOIN transcription_job_attempts a ON a.job_id = job.id
        WHERE a.attempt_number = $2 AND a.token_hash = $3 AND a.outcome = 'running'
        FOR SHARE OF a)`;

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
 * Closes a running attempt without a commit. `failed` also fails the job; a charged
 * `retryable_failed` that used the last allowed attempt fails the job too (J3). Returns the
 * job's status afterwards.
 */
export async function closeAttempt(
  pool: Pool,
  fence: AttemptFence,
  close: AttemptClose,
  maxAttempts: number,
): Promise<{ jobStatus: string }> {
  return withTransaction(pool, async (client) => {
    await lockRunningAttempt(client, fence, 'UPDATE');
    await closeAttemptIn(client, fence, close);
    if (close.outcome === 'failed') {
      await failJobIn(
        client,
        fence.jobId,
        close.category ?? 'internal',
        close.detail ?? '',
        fence.attemptNumber,
      );
    } else if (close.outcome === 'retryable_failed' && !close.refunded) {
      const charged = await chargedAttempts(client, fence.jobId);
      if (charged >= maxAttempts) {
        await failJobIn(
          client,
          fence.jobId,
          close.category ?? 'internal',
          `attempts exhausted (${charged} of ${maxAttempts})`,
          fence.attemptNumber,
        );
      }
    } else if (close.outcome === 'canceled') {
      await client.query(
        `UPDATE transcription_jobs SET status = 'canceled', ended_at = now(), updated_at = now(), stage = 'done'
          WHERE id = $1 AND status IN ${ACTIVE_STATUS_LIST}`,
        [fence.jobId],
      );
    }
    const { rows } = await client.query('SELECT status FROM transcription_jobs WHERE id = $1', [
      fence.jobId,
    ]);
    return { jobStatus: rows[0].status };
  });
}

async function closeAttemptIn(client: PoolClient, fence: AttemptFence, close: AttemptClose) {
  const updated = await client.query(
    `UPDATE transcription_job_attempts
        SET outcome = $4, error_category = $5, error_detail = $6, refunded = $7, ended_at = now(),
            completed_segments = $8, failed_segments = $9, total_segments = $10
      WHERE job_id = $1 AND attempt_number = $2 AND token_hash = $3 AND outcome = 'running'`,
    [
      fence.jobId,
      fence.attemptNumber,
      fence.tokenHash,
      close.outcome,
      close.category,
      close.detail,
      close.refunded ?? false,
      close.counts?.completed ?? 0,
      close.counts?.failed ?? 0,
      close.counts?.total ?? null,
    ],
  );
  if (updated.rowCount !== 1) {
    throw new StaleAttemptError(
      `attempt ${fence.attemptNumber} of job ${fence.jobId} is no longer running`,
    );
  }
}

export interface CommitInput {
  segments: Segment[];
  completed: number;
  failed: number;
  total: number;
  engine: EngineIdentity;
}

export type CommitResult =
  | { state: 'committed'; revision: number; eventId: number }
  | { state: 'conflict'; currentRevision: number };

/**
 * J1: the one commit of a job, in one transaction: page CAS on the attempt's input revision,
 * the new revision with its provenance, the attempt `completed`, the job `completed` with its
 * counts, the derived full-text index, and the completion event. A CAS miss writes nothing
 * here; the caller fails the job with `conflict` in a transaction of its own.
 * Idempotent: a retry after a lost reply finds its own completed attempt and returns it.
 */
export async function commitPageRevision(
  pool: Pool,
  fence: AttemptFence,
  input: CommitInput,
): Promise<CommitResult> {
  return withTransaction(pool, async (client) => {
    const previous = await client.query(
      `SELECT outcome, result_revision FROM transcription_job_attempts
        WHERE job_id = $1 AND attempt_number = $2 AND token_hash = $3`,
      [fence.jobId, fence.attemptNumber, fence.tokenHash],
    );
    if (previous.rows[0]?.outcome === 'completed') {
      const event = await client.query(
        `SELECT id FROM event_outbox WHERE type = $1 AND data->>'jobId' = $2 ORDER BY id LIMIT 1`,
        [EVENT_TYPES.completed, fence.jobId],
      );
      return {
        state: 'committed',
        revision: previous.rows[0].result_revision,
        eventId: event.rows[0]?.id ?? 0,
      };
    }
    const attempt = await lockRunningAttempt(client, fence, 'UPDATE', { lockPage: true });
    const page = await client.query(`SELECT canvas_uri, revision FROM pages WHERE id = $1`, [
      attempt.page_id,
    ]);
    const current = page.rows[0];
    if (current.revision !== attempt.input_revision) {
      return { state: 'conflict', currentRevision: current.revision };
    }
    const revision = attempt.input_revision + 1;
    const annotationPage: AnnotationPage = buildAnnotationPage(
      current.canvas_uri,
      revision,
      input.segments,
      attempt.snapshot.language,
    );
    const cas = await client.query(
      `UPDATE pages SET revision = $3, annotation_page = $4, search_text = $5, updated_at = now()
        WHERE id = $1 AND revision = $2`,
      [
        attempt.page_id,
        attempt.input_revision,
        revision,
        JSON.stringify(annotationPage),
        plainText(input.segments),
      ],
    );
    if (cas.rowCount !== 1) return { state: 'conflict', currentRevision: current.revision };
    await client.query(
      `INSERT INTO page_revisions (page_id, revision, annotation_page, source, engine, model, model_version, job_id,
         attempt_number)
       VALUES ($1, $2, $3, 'engine', $4, $5, $6, $7, $8)`,
      [
        attempt.page_id,
        revision,
        JSON.stringify(annotationPage),
        input.engine.engine,
        input.engine.model,
        input.engine.version,
        fence.jobId,
        fence.attemptNumber,
      ],
    );
    await client.query(
      `UPDATE transcription_job_attempts
          SET outcome = 'completed', result_revision = $4, ended_at = now(),
              completed_segments = $5, failed_segments = $6, total_segments = $7
        WHERE job_id = $1 AND attempt_number = $2 AND token_hash = $3 AND outcome = 'running'`,
      [
        fence.jobId,
        fence.attemptNumber,
        fence.tokenHash,
        revision,
        input.completed,
        input.failed,
        input.total,
      ],
    );
    await client.query(
      `UPDATE transcription_jobs
          SET status = 'completed', result_revision = $2, completed_segments = $3, failed_segments = $4,
              total_segments = $5, stage = 'done', ended_at = now(), updated_at = now(),
              error_category = NULL, error_detail = NULL
        WHERE id = $1`,
      [fence.jobId, revision, input.completed, input.failed, input.total],
    );
    await resetOutageBackoff(client, attempt.snapshot.provider, attempt.workspace_id);
    const { workspaceId, data } = await jobEventData(client, fence.jobId, {
      attemptNumber: fence.attemptNumber,
      completedSegments: input.completed,
      failedSegments: input.failed,
      totalSegments: input.total,
    });
    const eventId = await appendEvent(client, {
      workspaceId,
      type: EVENT_TYPES.completed,
      subject: `transcription-jobs/${fence.jobId}`,
      data,
    });
    return { state: 'committed', revision, eventId };
  });
}

/** J1: a CAS miss fails the job with `conflict`; nothing of the attempt's work is written. */
export async function failOnConflict(
  pool: Pool,
  fence: AttemptFence,
  currentRevision: number,
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await lockRunningAttempt(client, fence, 'UPDATE');
    const detail = `page changed since the input revision (now at ${currentRevision})`;
    await closeAttemptIn(client, fence, { outcome: 'failed', category: 'conflict', detail });
    await failJobIn(client, fence.jobId, 'conflict', detail, fence.attemptNumber);
  });
}

/**
 * Q3: a pausing failure. In one transaction: the attempt closes `retryable_failed`, refunded
 * (it does not count), and the provider's queue pauses; an already paused provider keeps its
 * episode. Returns when the queue may open again (null: only an operator's Resume).
 */
export async function pauseProvider(
  pool: Pool,
  fence: AttemptFence,
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
  return withTransaction(pool, async (client) => {
    const attempt = await lockRunningAttempt(client, fence, 'UPDATE');
    await closeAttemptIn(client, fence, {
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
    return pauseProviderIn(client, args.provider, args.reason, args.retryAfterMs, now, key);
  });
}

/** The running attempt's context, read without locks (every write is fenced on its own). */
export function readRunningAttempt(db: Queryable, fence: AttemptFence) {
  return runningAttemptRow(db, fence);
}

/** The attempt row the fence names, while it is running; a dead token is a `StaleAttemptError`. */
async function runningAttemptRow(db: Queryable, fence: AttemptFence, lock?: 'SHARE' | 'UPDATE') {
  const { rows } = await db.query(
    `SELECT a.attempt_number, a.input_revision, a.snapshot, j.workspace_id, j.page_id
       FROM transcription_job_attempts a JOIN transcription_jobs j ON j.id = a.job_id
      WHERE a.job_id = $1 AND a.attempt_number = $2 AND a.token_hash = $3 AND a.outcome = 'running'
      ${lock ? `FOR ${lock} OF a` : ''}`,
    [fence.jobId, fence.attemptNumber, fence.tokenHash],
  );
  const row = rows[0];
  if (!row) {
    throw new StaleAttemptError(
      `attempt ${fence.attemptNumber} of job ${fence.jobId} is no longer running`,
    );
  }
  return row as {
    attempt_number: number;
    input_revision: number;
    snapshot: JobSnapshot;
    workspace_id: number;
    page_id: number;
  };
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
