import type { Queryable } from './pool';

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
    `UPDATE engine_jobs SET deleted_at = coalesce($3, now())
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
