import { StaleAttemptError } from '../core/failures';
import type { JobSnapshot } from '../core/provider';
import type { PoolClient, Queryable } from './pool';

/**
 * A1: the attempt fence. Every write of a running attempt names it by job, attempt number and
 * token hash, and locks or updates it `WHERE` the one predicate below in its own transaction;
 * a miss is a `StaleAttemptError`. The lock also orders the write against a concurrent claim,
 * cancel or supersede: whichever commits first wins, and the loser sees the attempt closed.
 *
 * Lock order, everywhere: page, then job, then attempt. Supersede (page, job, attempt),
 * cancel (job, attempt) and commit (page, job, attempt) therefore never deadlock.
 */
export interface AttemptFence {
  jobId: string;
  attemptNumber: number;
  tokenHash: Buffer;
}

/**
 * The attempt a fence names, on `transcription_job_attempts a`, with $1 job id, $2 attempt
 * number and $3 token hash (`fenceParams`) in every statement that uses it.
 */
const FENCED_ATTEMPT = 'a.job_id = $1 AND a.attempt_number = $2 AND a.token_hash = $3';
/** The fence predicate: the named attempt, while it is still running. */
const RUNNING_ATTEMPT = `${FENCED_ATTEMPT} AND a.outcome = 'running'`;

/** $1, $2, $3 of every fenced statement; a statement's own values follow from $4. */
export function fenceParams(fence: AttemptFence): [string, number, Buffer] {
  return [fence.jobId, fence.attemptNumber, fence.tokenHash];
}

function staleAttempt(fence: AttemptFence): StaleAttemptError {
  return new StaleAttemptError(
    `attempt ${fence.attemptNumber} of job ${fence.jobId} is no longer running`,
  );
}

export interface RunningAttempt {
  attempt_number: number;
  input_revision: number;
  snapshot: JobSnapshot;
  workspace_id: number;
  page_id: number;
}

/** Locks the running attempt named by the fence (after its page when asked, and its job). */
export async function lockRunningAttempt(
  client: PoolClient,
  fence: AttemptFence,
  mode: 'SHARE' | 'UPDATE',
  options: { lockPage?: boolean } = {},
): Promise<RunningAttempt> {
  if (options.lockPage) {
    await client.query(
      `SELECT 1 FROM pages WHERE id = (SELECT page_id FROM transcription_jobs WHERE id = $1) FOR UPDATE`,
      [fence.jobId],
    );
  }
  await client.query('SELECT 1 FROM transcription_jobs WHERE id = $1 FOR UPDATE', [fence.jobId]);
  return runningAttemptRow(client, fence, mode);
}

/** The running attempt's context, read without locks (every write is fenced on its own). */
export function readRunningAttempt(db: Queryable, fence: AttemptFence): Promise<RunningAttempt> {
  return runningAttemptRow(db, fence);
}

async function runningAttemptRow(
  db: Queryable,
  fence: AttemptFence,
  lock?: 'SHARE' | 'UPDATE',
): Promise<RunningAttempt> {
  const { rows } = await db.query(
    `SELECT a.attempt_number, a.input_revision, a.snapshot, j.workspace_id, j.page_id
       FROM transcription_job_attempts a JOIN transcription_jobs j ON j.id = a.job_id
      WHERE ${RUNNING_ATTEMPT}
      ${lock ? `FOR ${lock} OF a` : ''}`,
    fenceParams(fence),
  );
  const row = rows[0];
  if (!row) throw staleAttempt(fence);
  return row as RunningAttempt;
}

/**
 * Closes or completes the running attempt: `set` assigns its columns from $4 on (`values`).
 * The caller holds the attempt's lock; a miss is a `StaleAttemptError` all the same.
 */
export async function updateRunningAttempt(
  client: PoolClient,
  fence: AttemptFence,
  set: string,
  values: unknown[],
): Promise<void> {
  const updated = await client.query(
    `UPDATE transcription_job_attempts a SET ${set} WHERE ${RUNNING_ATTEMPT}`,
    [...fenceParams(fence), ...values],
  );
  if (updated.rowCount !== 1) throw staleAttempt(fence);
}

/**
 * The attempt the fence names, whatever its outcome: a retried commit after a lost reply
 * finds its own attempt completed.
 */
export async function fencedAttemptOutcome(
  db: Queryable,
  fence: AttemptFence,
): Promise<{ outcome: string; resultRevision: number | null } | undefined> {
  const { rows } = await db.query(
    `SELECT a.outcome, a.result_revision FROM transcription_job_attempts a WHERE ${FENCED_ATTEMPT}`,
    fenceParams(fence),
  );
  const row = rows[0];
  return row ? { outcome: row.outcome, resultRevision: row.result_revision } : undefined;
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
        WHERE ${RUNNING_ATTEMPT}
        FOR SHARE OF a)`;
