import type { Queryable } from './pool';
import { UNFINISHED_STATUS_LIST } from './sql';

/**
 * O3 retention of text that was never committed: a job that ended `failed`, `canceled` or
 * `superseded` leaves its checkpoints behind (recognized lines, raw recording segments). They
 * served only that job's next attempt; once the job has been over for the retention period
 * they are deleted, as the recognized text of a session that could not finish is in the system
 * Quire learns from. Attempts, the ledger and the job's counts stay as audit evidence (A2).
 */
export async function purgeUnfinishedText(
  db: Queryable,
  retentionDays: number,
  now = new Date(),
): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  const deleted = await db.query(
    `DELETE FROM job_checkpoints c USING transcription_jobs j
      WHERE c.job_id = j.id AND j.status IN ${UNFINISHED_STATUS_LIST}
        AND j.ended_at < $1`,
    [cutoff],
  );
  return deleted.rowCount ?? 0;
}
