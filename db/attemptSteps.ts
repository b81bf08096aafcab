import type { Queryable } from './pool';

/**
 * D7/D9: the engine steps an attempt ran to their end, one row each (migrations/0018). A step
 * is named by its workflow run and activity id, as Temporal names it to the workflow too.
 */
export interface AttemptStepKey {
  runId: string;
  activityId: string;
}

export type AttemptStepOutcome = 'completed' | 'failed' | 'paused';

/**
 * Records that a step of the attempt finished on `worker`. A step reported twice (its
 * activity ran again after a lost report) keeps its first row: the work was done once.
 */
export async function recordAttemptStep(
  db: Queryable,
  step: AttemptStepKey & {
    jobId: string;
    attemptNumber: number;
    step: string;
    worker: string;
    outcome: AttemptStepOutcome;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO attempt_steps (run_id, activity_id, job_id, attempt_number, step, worker, outcome)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id, activity_id) DO NOTHING`,
    [
      step.runId,
      step.activityId,
      step.jobId,
      step.attemptNumber,
      step.step,
      step.worker,
      step.outcome,
    ],
  );
}

/**
 * D7: whether the named step of this still-running attempt finished (its work saved) though
 * the workflow heard only of a timeout. False when the attempt is no longer running.
 */
export async function attemptStepFinished(
  db: Queryable,
  args: AttemptStepKey & { jobId: string; attemptNumber: number },
): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM attempt_steps s
       JOIN transcription_job_attempts a
         ON a.job_id = s.job_id AND a.attempt_number = s.attempt_number AND a.outcome = 'running'
      WHERE s.run_id = $1 AND s.activity_id = $2 AND s.job_id = $3 AND s.attempt_number = $4`,
    [args.runId, args.activityId, args.jobId, args.attemptNumber],
  );
  return rows.length > 0;
}
