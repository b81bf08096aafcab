import type { Queryable } from './pool';
import { ACTIVE_STATUS_LIST } from './sql';

/**
 * Engine jobs: the copies of recordings that audio engines hold (T2 `submit`). Each is
 * recorded when submitted and marked when its copy is deleted, so the stranded sweep (O3)
 * and a cancelled job's cleanup (J5) can find the ones still held.
 */
export interface EngineJobRef {
  provider: string;
  engineJobId: string;
}

/** Records an engine job of a Quire job; a replayed submit finds the row and keeps it. */
export async function recordEngineJob(
  db: Queryable,
  job: EngineJobRef & { jobId: string },
): Promise<void> {
  await db.query(
    `INSERT INTO engine_jobs (provider, engine_job_id, job_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [job.provider, job.engineJobId, job.jobId],
  );
}

/**
 * Marks an engine's copy deleted; false when it was already marked (a concurrent cleanup got
 * there first: the copy is gone either way).
 */
export async function markEngineCopyDeleted(
  db: Queryable,
  job: EngineJobRef,
  at?: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE engine_jobs SET deleted_at = coalesce($3::timestamptz, now())
      WHERE provider = $1 AND engine_job_id = $2 AND deleted_at IS NULL`,
    [job.provider, job.engineJobId, at ?? null],
  );
  return rowCount === 1;
}

/** The engine jobs of a Quire job whose copies are not yet deleted. */
export async function listUndeletedEngineJobs(
  db: Queryable,
  jobId: string,
): Promise<EngineJobRef[]> {
  const { rows } = await db.query(
    `SELECT provider, engine_job_id FROM engine_jobs WHERE job_id = $1 AND deleted_at IS NULL`,
    [jobId],
  );
  return rows.map((r) => ({ provider: r.provider, engineJobId: r.engine_job_id }));
}

/**
 * Recorded engine copies made before `createdBefore`, not yet deleted, whose Quire job has
 * ended: nothing will use them again. Oldest first.
 */
export async function listStrandedEngineJobs(
  q: Queryable,
  createdBefore: Date,
  limit = 1000,
): Promise<EngineJobRef[]> {
  const { rows } = await q.query(
    `SELECT e.provider, e.engine_job_id
       FROM engine_jobs e JOIN transcription_jobs j ON j.id = e.job_id
      WHERE e.deleted_at IS NULL AND e.created_at < $1 AND j.status NOT IN ${ACTIVE_STATUS_LIST}
      ORDER BY e.created_at
      LIMIT $2`,
    [createdBefore, limit],
  );
  return (rows as Array<{ provider: string; engine_job_id: string }>).map((r) => ({
    provider: r.provider,
    engineJobId: r.engine_job_id,
  }));
}

/** Which of `engineJobIds` (of one provider) an active Quire job still references. */
export async function engineJobsHeldByActiveJobs(
  q: Queryable,
  provider: string,
  engineJobIds: readonly string[],
): Promise<Set<string>> {
  const { rows } = await q.query(
    `SELECT e.engine_job_id FROM engine_jobs e JOIN transcription_jobs j ON j.id = e.job_id
      WHERE e.provider = $1 AND e.engine_job_id = ANY($2::text[]) AND j.status IN ${ACTIVE_STATUS_LIST}`,
    [provider, engineJobIds],
  );
  return new Set((rows as Array<{ engine_job_id: string }>).map((r) => r.engine_job_id));
}
