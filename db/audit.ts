import { JOB_DEFAULTS } from '../core/temporal';
import type { Queryable } from './pool';
import { EVENT_RETENTION_MARK } from './retention';
import { ACTIVE_STATUS_LIST } from './sql';

/**
 * The invariant auditor: checks over the whole database that the rules of SPEC §3-§4 hold.
 * Every integration and chaos test ends by running it; operators can run it too
 * (`npm run admin -- audit`). Returns the violations found, empty when all is well.
 */
const CHECKS: Array<{ name: string; sql: string }> = [
  {
    name: 'A1 at most one running attempt per job',
    sql: `SELECT job_id AS subject FROM transcription_job_attempts WHERE outcome = 'running'
           GROUP BY job_id HAVING count(*) > 1`,
  },
  {
    name: 'A1 a running attempt belongs to a running job',
    sql: `SELECT a.job_id || '/' || a.attempt_number AS subject FROM transcription_job_attempts a
           JOIN transcription_jobs j ON j.id = a.job_id WHERE a.outcome = 'running' AND j.status <> 'running'`,
  },
  {
    name: 'A2 attempt outcomes agree with their end time and result',
    sql: `SELECT job_id || '/' || attempt_number AS subject FROM transcription_job_attempts
           WHERE (outcome = 'running') <> (ended_at IS NULL)
              OR (outcome = 'completed') <> (result_revision IS NOT NULL)
              OR (refunded AND outcome <> 'retryable_failed')`,
  },
  {
    name: 'A2 attempt numbers are contiguous from 1',
    sql: `SELECT job_id AS subject FROM transcription_job_attempts GROUP BY job_id
           HAVING max(attempt_number) <> count(*) OR min(attempt_number) <> 1`,
  },
  {
    name: 'J1 a completed job has exactly one completed attempt with its result revision',
    sql: `SELECT j.id AS subject FROM transcription_jobs j WHERE j.status = 'completed' AND 1 <> (
            SELECT count(*) FROM transcription_job_attempts a
             WHERE a.job_id = j.id AND a.outcome = 'completed' AND a.result_revision = j.result_revision)`,
  },
  {
    name: 'J1 only a completed job has a completed attempt',
    sql: `SELECT a.job_id AS subject FROM transcription_job_attempts a JOIN transcription_jobs j ON j.id = a.job_id
           WHERE a.outcome = 'completed' AND j.status <> 'completed'`,
  },
  {
    name: 'J1 a completed job has exactly one engine revision, and no other job state has any',
    sql: `SELECT j.id AS subject FROM transcription_jobs j JOIN pages pg ON pg.id = j.page_id AND pg.deleted_at IS NULL
           WHERE (SELECT count(*) FROM page_revisions r WHERE r.job_id = j.id)
                 <> CASE WHEN j.status = 'completed' THEN 1 ELSE 0 END
              OR (j.status = 'completed' AND NOT EXISTS (
                   SELECT 1 FROM page_revisions r WHERE r.job_id = j.id AND r.page_id = j.page_id
                      AND r.revision = j.result_revision AND r.revision = j.input_revision + 1))`,
  },
  {
    // The completion event is written in the commit that sets the job's ended_at, so both carry
    // the same time. Retention (db/retention.ts) removes events older than the mark it records:
    // a job that ended before the mark may have lost its event to retention, never gained two.
    name: 'E1 a completed job has exactly one completion event (or none, once retention removed it)',
    sql: `SELECT j.id AS subject FROM transcription_jobs j
           CROSS JOIN LATERAL (
             SELECT count(*) AS n FROM event_outbox e
              WHERE e.type = 'dev.quire.transcription.completed' AND e.data->>'jobId' = j.id) c
           WHERE j.status = 'completed'
             AND NOT (c.n = 1 OR (c.n = 0 AND j.ended_at < coalesce(
                   (SELECT purged_before FROM retention_marks WHERE name = '${EVENT_RETENTION_MARK}'),
                   '-infinity'::timestamptz)))`,
  },
  {
    name: 'E1 only completed jobs have completion events',
    sql: `SELECT e.data->>'jobId' AS subject FROM event_outbox e
           LEFT JOIN transcription_jobs j ON j.id = e.data->>'jobId'
           WHERE e.type = 'dev.quire.transcription.completed' AND (j.id IS NULL OR j.status <> 'completed')`,
  },
  {
    name: 'J1 every page revision chain is contiguous from 0 to the current revision',
    sql: `SELECT p.id::text AS subject FROM pages p
           WHERE p.deleted_at IS NULL AND ((SELECT count(*) FROM page_revisions r WHERE r.page_id = p.id) <> p.revision + 1
              OR (SELECT max(revision) FROM page_revisions r WHERE r.page_id = p.id) <> p.revision
              OR NOT EXISTS (SELECT 1 FROM page_revisions r WHERE r.page_id = p.id AND r.revision = 0))`,
  },
  {
    name: 'I4 a page derivative is a live blob of its own workspace, on a live image page',
    sql: `SELECT p.id::text AS subject FROM pages p LEFT JOIN blobs b ON b.key = p.derivative_key
           WHERE p.derivative_key IS NOT NULL
             AND (p.deleted_at IS NOT NULL OR p.kind <> 'image' OR b.key IS NULL
                  OR b.workspace_id <> p.workspace_id OR b.deleted_at IS NOT NULL)`,
  },
  {
    name: 'J1 the page holds the AnnotationPage of its current revision',
    sql: `SELECT p.id::text AS subject FROM pages p JOIN page_revisions r ON r.page_id = p.id AND r.revision = p.revision
           WHERE r.annotation_page <> p.annotation_page`,
  },
  {
    name: 'J2 counts add up on completed jobs and attempts',
    sql: `SELECT id AS subject FROM transcription_jobs
           WHERE status = 'completed' AND completed_segments + failed_segments <> total_segments
          UNION ALL
          SELECT job_id || '/' || attempt_number FROM transcription_job_attempts
           WHERE outcome = 'completed' AND completed_segments + failed_segments <> total_segments`,
  },
  {
    name: 'J2 a completed job committed at least one segment (or the page had none)',
    sql: `SELECT id AS subject FROM transcription_jobs
           WHERE status = 'completed' AND completed_segments = 0 AND total_segments > 0`,
  },
  {
    name: 'J4 at most one active job per page',
    sql: `SELECT page_id::text AS subject FROM transcription_jobs WHERE status IN ${ACTIVE_STATUS_LIST}
           GROUP BY page_id HAVING count(*) > 1`,
  },
  {
    name: 'D11 an ended job holds no checkpoints',
    sql: `SELECT DISTINCT c.job_id AS subject FROM job_checkpoints c
            JOIN transcription_jobs j ON j.id = c.job_id WHERE j.status NOT IN ${ACTIVE_STATUS_LIST}`,
  },
  {
    name: 'J3 no job used more charged attempts than it is allowed',
    sql: `SELECT job_id AS subject FROM transcription_job_attempts WHERE NOT refunded
           GROUP BY job_id HAVING count(*) > $1`,
  },
];

export interface Violation {
  check: string;
  subjects: string[];
}

export async function auditInvariants(
  db: Queryable,
  options: { maxAttempts?: number } = {},
): Promise<Violation[]> {
  const violations: Violation[] = [];
  for (const check of CHECKS) {
    const params = check.sql.includes('$1')
      ? [options.maxAttempts ?? JOB_DEFAULTS.maxAttempts]
      : [];
    const { rows } = await db.query<{ subject: string }>(check.sql, params);
    if (rows.length > 0)
      violations.push({ check: check.name, subjects: rows.map((r) => r.subject) });
  }
  return violations;
}
