import type { Queryable } from './pool';
import { ACTIVE_STATUS_LIST } from './sql';

/**
 * Engine-side copies of recordings (`engine_jobs`): one row per job an engine holds for
 * Quire, marked `deleted_at` once the copy is gone (O3).
 */

export interface EngineJobRef {
  provider: string;
  engineJobId: string;
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

/**
 * Records that the engine's copy is gone. False when no unmarked row was there: Quire never
 * recorded it, or a concurrent sweep marked it first.
 */
export async function markEngineCopyDeleted(
  q: Queryable,
  provider: string,
  engineJobId: string,
  at?: Date,
): Promise<boolean> {
  const marked = await q.query(
    `UPDATE engine_jobs SET deleted_at = coalesce($3::timestamptz, now())
      WHERE provider = $1 AND engine_job_id = $2 AND deleted_at IS NULL`,
    [provider, engineJobId, at ?? null],
  );
  return marked.rowCount === 1;
}
