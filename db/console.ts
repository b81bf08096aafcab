import { PENDING_CLEANUP_LIST } from './blobs';
import type { Queryable } from './pool';
import {
  ACTIVE_STATUS_LIST,
  GIVEN_UP_DELIVERY_LIST,
  sqlAttemptOutcome,
  sqlDeliveryStatus,
  sqlJobStatus,
  sqlJobStatuses,
} from './sql';

/**
 * Read models of the console (SPEC §9) that no other repository serves: the operations
 * figures, the batches list and the cheap change digests the console's live stream compares.
 * Every query is scoped by workspace; provider queue states are the installation's and the
 * workspace's own.
 */

export interface OperationsFigures {
  pendingJobs: number;
  /** The oldest job still waiting to run (pending), with its age. */
  oldestPending: { jobId: string; pageId: number; createdAt: Date; stage: string | null } | null;
  runningJobs: number;
  runningAttempts: number;
  failedJobsToday: number;
  failedDeliveries: number;
  pendingDeliveries: number;
}

/** One workspace's figures, or (M1, operators only) with `null` the whole installation's. */
export async function operationsFigures(
  db: Queryable,
  workspaceId: number | null,
): Promise<OperationsFigures> {
  const [jobs, oldest, attempts, deliveries] = await Promise.all([
    db.query<{ pending: number; running: number; failed_today: number }>(
      `SELECT count(*) FILTER (WHERE status = ${sqlJobStatus('pending')})::int AS pending,
              count(*) FILTER (WHERE status = ${sqlJobStatus('running')})::int AS running,
              count(*) FILTER (WHERE status = ${sqlJobStatus('failed')} AND ended_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')::int
                AS failed_today
         FROM transcription_jobs WHERE ($1::bigint IS NULL OR workspace_id = $1)
          AND status IN ${sqlJobStatuses(['pending', 'running', 'failed'])}`,
      [workspaceId],
    ),
    db.query<{ id: string; page_id: number; created_at: Date; stage: string | null }>(
      `SELECT id, page_id, created_at, stage FROM transcription_jobs
        WHERE ($1::bigint IS NULL OR workspace_id = $1) AND status = ${sqlJobStatus('pending')} ORDER BY id LIMIT 1`,
      [workspaceId],
    ),
    db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM transcription_job_attempts a JOIN transcription_jobs j ON j.id = a.job_id
        WHERE ($1::bigint IS NULL OR j.workspace_id = $1) AND a.outcome = ${sqlAttemptOutcome('running')}`,
      [workspaceId],
    ),
    db.query<{ failed: number; pending: number }>(
      `SELECT count(*) FILTER (WHERE status IN ${GIVEN_UP_DELIVERY_LIST})::int AS failed,
              count(*) FILTER (WHERE status = ${sqlDeliveryStatus('pending')})::int AS pending
         FROM webhook_deliveries WHERE ($1::bigint IS NULL OR workspace_id = $1)`,
      [workspaceId],
    ),
  ]);
  const o = oldest.rows[0];
  return {
    pendingJobs: jobs.rows[0]?.pending ?? 0,
    runningJobs: jobs.rows[0]?.running ?? 0,
    failedJobsToday: jobs.rows[0]?.failed_today ?? 0,
    oldestPending: o
      ? { jobId: o.id, pageId: o.page_id, createdAt: o.created_at, stage: o.stage }
      : null,
    runningAttempts: attempts.rows[0]?.n ?? 0,
    failedDeliveries: deliveries.rows[0]?.failed ?? 0,
    pendingDeliveries: deliveries.rows[0]?.pending ?? 0,
  };
}

/** M1: a workspace's own share of the cleanup figures (the installation's are for operators). */
export async function workspaceCleanupFigures(
  db: Queryable,
  workspaceId: number,
  now: Date,
): Promise<{
  pendingCleanups: number;
  failedCleanups: number;
  oldestPendingCleanupAgeMs: number | null;
}> {
  const { rows } = await db.query<{ pending: number; failing: number; oldest: Date | null }>(
    `SELECT count(*)::int AS pending, count(*) FILTER (WHERE status = 'failing')::int AS failing,
            min(created_at) AS oldest
       FROM blob_cleanups WHERE workspace_id = $1 AND status IN ${PENDING_CLEANUP_LIST}`,
    [workspaceId],
  );
  const r = rows[0];
  return {
    pendingCleanups: r?.pending ?? 0,
    failedCleanups: r?.failing ?? 0,
    oldestPendingCleanupAgeMs: r?.oldest ? Math.max(0, now.getTime() - r.oldest.getTime()) : null,
  };
}

export interface BatchSummary {
  id: string;
  createdAt: Date;
  jobs: number;
  active: number;
  completed: number;
  failed: number;
  canceled: number;
}

/** Most recent batches of a workspace with their job counts by status. */
export async function recentBatches(
  db: Queryable,
  workspaceId: number,
  limit = 20,
): Promise<BatchSummary[]> {
  const { rows } = await db.query(
    `SELECT b.id, b.created_at,
            count(j.id)::int AS jobs,
            count(j.id) FILTER (WHERE j.status IN ${ACTIVE_STATUS_LIST})::int AS active,
            count(j.id) FILTER (WHERE j.status = ${sqlJobStatus('completed')})::int AS completed,
            count(j.id) FILTER (WHERE j.status = ${sqlJobStatus('failed')})::int AS failed,
            count(j.id) FILTER (WHERE j.status = ${sqlJobStatus('canceled')})::int AS canceled
       FROM batches b LEFT JOIN transcription_jobs j ON j.batch_id = b.id AND j.workspace_id = b.workspace_id
      WHERE b.workspace_id = $1
      GROUP BY b.id, b.created_at
      ORDER BY b.id DESC LIMIT $2`,
    [workspaceId, limit],
  );
  return rows.map((r) => ({
    id: r.id,
    createdAt: r.created_at,
    jobs: r.jobs,
    active: r.active,
    completed: r.completed,
    failed: r.failed,
    canceled: r.canceled,
  }));
}

export async function getBatchCreatedAt(
  db: Queryable,
  workspaceId: number,
  batchId: string,
): Promise<Date | undefined> {
  const { rows } = await db.query<{ created_at: Date }>(
    'SELECT created_at FROM batches WHERE workspace_id = $1 AND id = $2',
    [workspaceId, batchId],
  );
  return rows[0]?.created_at;
}

/**
 * A digest that changes whenever any job of the workspace changes (status, stage, counts all
 * bump `updated_at`); the live stream compares it instead of shipping rows. `updated_at` is
 * `now()`, the start of the writing transaction: the newest of them need not move when a job
 * changes (a transaction that began earlier commits later), and two changes may share a
 * millisecond, so the digest sums every job's `updated_at` to the microsecond and counts the
 * active jobs.
 */
export async function jobsDigest(db: Queryable, workspaceId: number): Promise<string> {
  const { rows } = await db.query<{ n: string; active: string; stamps: string | null }>(
    `SELECT count(*)::text AS n,
            count(*) FILTER (WHERE status IN ${ACTIVE_STATUS_LIST})::text AS active,
            sum(extract(epoch FROM updated_at))::text AS stamps
       FROM transcription_jobs WHERE workspace_id = $1`,
    [workspaceId],
  );
  const r = rows[0];
  return `${r?.n ?? 0}:${r?.active ?? 0}:${r?.stamps ?? 0}`;
}

/**
 * A digest of the provider queue states a workspace sees: the installation's (pauses of shared
 * credentials hold every workspace) and its own (M3).
 */
export async function providersDigest(db: Queryable, workspaceId: number): Promise<string> {
  const { rows } = await db.query<{ provider: string; status: string; episode: number }>(
    `SELECT provider, status, episode FROM provider_state
      WHERE workspace_id IS NULL OR workspace_id = $1 ORDER BY provider, workspace_id NULLS FIRST`,
    [workspaceId],
  );
  return rows.map((r) => `${r.provider}=${r.status}#${r.episode}`).join(',');
}

/** Does this page belong to the workspace, and which blob holds its bytes? */
export async function pageMedia(
  db: Queryable,
  workspaceId: number,
  pageId: number,
): Promise<
  { blobKey: string | null; mediaType: string | null; sizeBytes: number | null } | undefined
> {
  const { rows } = await db.query(
    `SELECT p.blob_key, p.media_type, b.size_bytes FROM pages p LEFT JOIN blobs b ON b.key = p.blob_key
      WHERE p.workspace_id = $1 AND p.id = $2`,
    [workspaceId, pageId],
  );
  const r = rows[0];
  return r
    ? {
        blobKey: r.blob_key ?? null,
        mediaType: r.media_type ?? null,
        sizeBytes: r.size_bytes === null ? null : Number(r.size_bytes),
      }
    : undefined;
}
