import type { MediaKind } from '../core/media';
import { isActiveStatus } from '../core/temporal';
import { expireRunningAttempt } from './attempts';
import { cancelJobIfActive, failJob, JOB_COLUMNS, type JobRow, toJob } from './jobs';
import { type Pool, type Queryable, withTransaction } from './pool';
import { ACTIVE_STATUS_LIST } from './sql';

/**
 * D4: jobs whose workflow no longer runs in Temporal (terminated from the UI, failed, timed
 * out, history lost). The reconciler asks Temporal about active jobs, the least recently
 * checked first, and settles each whose workflow ended without it: continued in a new run
 * (which resumes from the checkpoints), recorded canceled, or failed with a category.
 */

/** How a job's workflow stands in Temporal, as the reconciler found it. */
export type WorkflowState =
  | 'RUNNING'
  | 'COMPLETED'
  | 'FAILED'
  | 'CANCELLED'
  | 'TERMINATED'
  | 'CONTINUED_AS_NEW'
  | 'TIMED_OUT'
  | 'NOT_FOUND'
  | 'UNKNOWN';

/** What became of a job whose workflow ended while the job was active. */
export type LostJobSettlement = 'still-running' | 'finished' | 'continue' | 'canceled' | 'failed';

/** After this many new runs a job whose workflow keeps ending is failed instead. */
export const MAX_WORKFLOW_RESTARTS = 3;

/** Active jobs whose workflow started at least `olderThanMs` ago, least recently checked first. */
export async function activeJobsToCheck(
  db: Queryable,
  olderThanMs: number,
  limit: number,
): Promise<Array<{ job: JobRow; kind: MediaKind }>> {
  const { rows } = await db.query(
    `SELECT ${JOB_COLUMNS}, p.kind FROM transcription_jobs j JOIN pages p ON p.id = j.page_id
      WHERE j.status IN ${ACTIVE_STATUS_LIST} AND j.workflow_started_at IS NOT NULL
        AND j.workflow_started_at < now() - ($1::text || ' milliseconds')::interval
      ORDER BY j.workflow_checked_at NULLS FIRST, j.id LIMIT $2`,
    [String(olderThanMs), limit],
  );
  return rows.map((r) => ({ job: toJob(r), kind: r.kind as MediaKind }));
}

/**
 * Settles one job against what Temporal said of its workflow, in one transaction that reads
 * the job again under its lock: a job that finished meanwhile (its workflow commits before it
 * returns) is left as it is.
 */
export async function settleLostJob(
  pool: Pool,
  jobId: string,
  workflow: WorkflowState,
): Promise<LostJobSettlement> {
  if (workflow === 'CANCELLED') {
    // Canceled in Temporal (its UI) without the workflow's cleanup recording it.
    const status = await cancelJobIfActive(pool, jobId);
    return status === 'canceled' ? 'canceled' : 'finished';
  }
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `SELECT status, workflow_restarts FROM transcription_jobs WHERE id = $1 FOR UPDATE`,
      [jobId],
    );
    const job = rows[0];
    if (!job || !isActiveStatus(job.status)) return 'finished';
    await client.query(`UPDATE transcription_jobs SET workflow_checked_at = now() WHERE id = $1`, [
      jobId,
    ]);
    if (workflow === 'RUNNING' || workflow === 'CONTINUED_AS_NEW' || workflow === 'UNKNOWN')
      return 'still-running';
    const restartable =
      workflow === 'TERMINATED' ||
      workflow === 'FAILED' ||
      workflow === 'TIMED_OUT' ||
      workflow === 'NOT_FOUND';
    if (restartable && job.workflow_restarts < MAX_WORKFLOW_RESTARTS) {
      await client.query(
        `UPDATE transcription_jobs SET workflow_restarts = workflow_restarts + 1, updated_at = now() WHERE id = $1`,
        [jobId],
      );
      return 'continue';
    }
    // A workflow that completed while its job is active, or one that keeps ending: the
    // job fails with a stated category; its running attempt (nobody drives it) is closed
    // as a crashed lease, as the next claim would have.
    await expireRunningAttempt(client, jobId, 'workflow no longer running');
    const detail = restartable
      ? `workflow ended ${workflow.toLowerCase().replace('_', ' ')} after ${job.workflow_restarts} new runs`
      : `workflow ended ${workflow.toLowerCase().replace('_', ' ')} while the job was active`;
    await failJob(client, jobId, 'internal', detail, null);
    return 'failed';
  });
}
