import { EVENT_TYPES } from '../core/cloudevents';
import type { FailureClass } from '../core/failures';
import { uuidv7, workflowIdForJob } from '../core/ids';
import type { NewJobRecord } from '../core/jobStore';
import type { MediaKind } from '../core/media';
import { snapshotFor } from '../core/pricing';
import type { JobSnapshot } from '../core/provider';
import {
  type AttemptOutcome,
  isActiveStatus,
  type JobPriority,
  type JobStatus,
} from '../core/temporal';
import { ConflictError, isUniqueViolation, NotFoundError } from './errors';
import { appendEvent } from './events';
import { inheritedEngineChoice } from './items';
import { jobsEnded } from './jobEnds';
import { getPageForUpdate } from './pages';
import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';
import { ACTIVE_STATUS_LIST } from './sql';

export interface JobRow {
  id: string;
  workspaceId: number;
  pageId: number;
  batchId: string | null;
  workflowId: string;
  status: JobStatus;
  provider: string;
  snapshot: JobSnapshot;
  inputRevision: number;
  idempotencyKey: string | null;
  externalReferenceId: string | null;
  metadata: Record<string, unknown>;
  stage: string | null;
  lastAttemptNumber: number;
  completedSegments: number;
  failedSegments: number;
  totalSegments: number | null;
  /** V3: lines a person edited or verified that the job's commit kept as they were. */
  keptSegments: number;
  resultRevision: number | null;
  errorCategory: FailureClass | null;
  errorDetail: string | null;
  supersededBy: string | null;
  workflowStartedAt: Date | null;
  /** M4: recorded over its workspace's active-job cap; no workflow until admitted (db/jobSlots.ts). */
  awaitingSlot: boolean;
  /** P8: `interactive` for a page a person submitted or re-ran; every start uses it. */
  priority: JobPriority;
  createdAt: Date;
  updatedAt: Date;
  endedAt: Date | null;
}

export const JOB_COLUMNS = `j.id, j.workspace_id, j.page_id, j.batch_id, j.workflow_id, j.status, j.provider, j.snapshot,
  j.input_revision, j.idempotency_key, j.external_reference_id, j.metadata, j.stage, j.last_attempt_number,
  j.completed_segments, j.failed_segments, j.total_segments, j.kept_segments, j.result_revision, j.error_category, j.error_detail,
  j.superseded_by, j.workflow_started_at, j.awaiting_slot, j.priority, j.created_at, j.updated_at, j.ended_at`;

export function toJob(r: Record<string, unknown>): JobRow {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as number,
    pageId: r.page_id as number,
    batchId: (r.batch_id as string | null) ?? null,
    workflowId: r.workflow_id as string,
    status: r.status as JobStatus,
    provider: r.provider as string,
    snapshot: r.snapshot as JobSnapshot,
    inputRevision: r.input_revision as number,
    idempotencyKey: (r.idempotency_key as string | null) ?? null,
    externalReferenceId: (r.external_reference_id as string | null) ?? null,
    metadata: (r.metadata as Record<string, unknown>) ?? {},
    stage: (r.stage as string | null) ?? null,
    lastAttemptNumber: r.last_attempt_number as number,
    completedSegments: r.completed_segments as number,
    failedSegments: r.failed_segments as number,
    totalSegments: (r.total_segments as number | null) ?? null,
    keptSegments: (r.kept_segments as number | null) ?? 0,
    resultRevision: (r.result_revision as number | null) ?? null,
    errorCategory: (r.error_category as FailureClass | null) ?? null,
    errorDetail: (r.error_detail as string | null) ?? null,
    supersededBy: (r.superseded_by as string | null) ?? null,
    workflowStartedAt: (r.workflow_started_at as Date | null) ?? null,
    awaitingSlot: r.awaiting_slot === true,
    priority: r.priority === 'interactive' ? 'interactive' : 'bulk',
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
    endedAt: (r.ended_at as Date | null) ?? null,
  };
}

export type NewJob = NewJobRecord;

export interface CreatedJob {
  job: JobRow;
  kind: MediaKind;
  /** False when the idempotency key returned an existing job (J6). */
  created: boolean;
  /** The job this one superseded (J4), whose workflow must now be cancelled. */
  superseded: { id: string; workflowId: string } | null;
}

/** J6: a concurrent creation with the same idempotency key won the insert. */
export function isJobKeyRace(error: unknown): boolean {
  return isUniqueViolation(error, 'transcription_jobs_workspace_id_idempotency_key_key');
}

/** M4: the advisory lock that serialises a workspace's admissions and capped recordings. */
const SLOT_LOCK_CLASS = 7_401_121;
export async function lockWorkspaceSlots(client: Queryable, workspaceId: number): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1, $2)', [SLOT_LOCK_CLASS, workspaceId]);
}

/**
 * D14: the lock that serialises admissions under the installation's pace. Taken only by
 * admission, after its workspace's lock, never on the path that records a job.
 */
export async function lockFleetSlots(client: Queryable): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1, $2)', [SLOT_LOCK_CLASS, FLEET_SLOT_KEY]);
}
/** No workspace has it: workspace ids start at 1. */
const FLEET_SLOT_KEY = 0;

/**
 * Creates a job for a page (J4, J6), in the caller's transaction: an existing job with the
 * same idempotency key is returned as it is; otherwise the page's active job, if any, becomes
 * `superseded` with its running attempt closed (its token dies), and the new job is inserted.
 * A concurrent request with the same key that wins the insert is a unique violation
 * (`isJobKeyRace`): the caller runs its transaction again and finds that job.
 */
export async function createJob(client: PoolClient, input: NewJob): Promise<CreatedJob> {
  if (input.idempotencyKey) {
    const existing = await client.query(
      `SELECT ${JOB_COLUMNS}, p.kind FROM transcription_jobs j JOIN pages p ON p.id = j.page_id
        WHERE j.workspace_id = $1 AND j.idempotency_key = $2`,
      [input.workspaceId, input.idempotencyKey],
    );
    if (existing.rows[0]) {
      return {
        job: toJob(existing.rows[0]),
        kind: existing.rows[0].kind,
        created: false,
        superseded: null,
      };
    }
  }
  // M4: under a cap every new job queues and the dispatcher admits the oldest first. The slot
  // lock, taken before any page or job row as admission takes it, makes "oldest" the order
  // jobs become visible in: no admission runs between this job's creation time and its commit,
  // so a job recorded concurrently can never be admitted ahead of an older one still being
  // written.
  const cap = await client.query('SELECT active_job_cap FROM workspaces WHERE id = $1', [
    input.workspaceId,
  ]);
  const capped = cap.rows[0]?.active_job_cap != null;
  if (capped) await lockWorkspaceSlots(client, input.workspaceId);
  // D14: a bulk job of a paced installation waits too, without any lock here: the pace is
  // a bound on open workflows, not an order across workspaces, so recording stays parallel.
  const awaitingSlot =
    capped || (input.fleetPaced === true && (input.priority ?? 'bulk') === 'bulk');
  const page = await getPageForUpdate(client, input.workspaceId, input.pageId);
  if (!page) throw new NotFoundError('page_not_found', `page ${input.pageId} not found`);
  const id = uuidv7();
  const workflowId = workflowIdForJob(id);
  // V9: a job its request leaves without an engine or language takes its item's, or its
  // collection's; read only when the snapshot is made here.
  const inherited =
    typeof input.snapshot === 'function'
      ? await inheritedEngineChoice(client, input.workspaceId, page.itemId)
      : {};
  const snapshot = snapshotFor(input.snapshot, page.kind, inherited);

  let superseded: CreatedJob['superseded'] = null;
  const active = await client.query(
    `SELECT id, workflow_id FROM transcription_jobs WHERE page_id = $1 AND status IN ${ACTIVE_STATUS_LIST} FOR UPDATE`,
    [page.id],
  );
  if (active.rows[0]) {
    superseded = { id: active.rows[0].id, workflowId: active.rows[0].workflow_id };
    await client.query(
      `UPDATE transcription_job_attempts SET outcome = 'superseded', ended_at = now()
        WHERE job_id = $1 AND outcome = 'running'`,
      [superseded.id],
    );
    await client.query(
      `UPDATE transcription_jobs SET status = 'superseded', superseded_by = $2, ended_at = now(), updated_at = now()
        WHERE id = $1`,
      [superseded.id, id],
    );
    await jobsEnded(client, [superseded.id]);
  }
  // Created when written, not when the transaction began: with the slot lock held, the order
  // of creation times is the order of commits within a capped workspace.
  const inserted = await client.query(
    `INSERT INTO transcription_jobs AS j (id, workspace_id, page_id, batch_id, workflow_id, provider, snapshot,
       input_revision, idempotency_key, external_reference_id, metadata, awaiting_slot, priority, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, clock_timestamp())
     RETURNING ${JOB_COLUMNS}`,
    [
      id,
      input.workspaceId,
      page.id,
      input.batchId ?? null,
      workflowId,
      snapshot.provider,
      JSON.stringify(snapshot),
      page.revision,
      input.idempotencyKey ?? null,
      input.externalReferenceId ?? null,
      JSON.stringify(input.metadata ?? {}),
      awaitingSlot,
      input.priority ?? 'bulk',
    ],
  );
  return { job: toJob(inserted.rows[0]), kind: page.kind, created: true, superseded };
}

export async function getJob(
  db: Queryable,
  workspaceId: number,
  jobId: string,
): Promise<JobRow | undefined> {
  const { rows } = await db.query(
    `SELECT ${JOB_COLUMNS} FROM transcription_jobs j WHERE j.workspace_id = $1 AND j.id = $2`,
    [workspaceId, jobId],
  );
  return rows[0] ? toJob(rows[0]) : undefined;
}

export async function getJobById(db: Queryable, jobId: string): Promise<JobRow | undefined> {
  const { rows } = await db.query(
    `SELECT ${JOB_COLUMNS} FROM transcription_jobs j WHERE j.id = $1`,
    [jobId],
  );
  return rows[0] ? toJob(rows[0]) : undefined;
}

export interface AttemptRow {
  jobId: string;
  attemptNumber: number;
  owner: string;
  inputRevision: number;
  startedAt: Date;
  endedAt: Date | null;
  outcome: AttemptOutcome;
  refunded: boolean;
  resultRevision: number | null;
  errorCategory: FailureClass | null;
  errorDetail: string | null;
  completedSegments: number;
  failedSegments: number;
  totalSegments: number | null;
  /** D9: the workers that ran this attempt's engine steps (attempt_steps), in name order. */
  stepWorkers: string[];
}

/** The ordered attempt audit of a job (L1). Tokens are never selected. */
export async function listAttempts(db: Queryable, jobId: string): Promise<AttemptRow[]> {
  const { rows } = await db.query(
    `SELECT job_id, attempt_number, owner, input_revision, started_at, ended_at, outcome, refunded, result_revision,
            error_category, error_detail, completed_segments, failed_segments, total_segments,
            (SELECT coalesce(array_agg(DISTINCT s.worker ORDER BY s.worker), '{}') FROM attempt_steps s
              WHERE s.job_id = a.job_id AND s.attempt_number = a.attempt_number) AS step_workers
       FROM transcription_job_attempts a WHERE job_id = $1 ORDER BY attempt_number`,
    [jobId],
  );
  return rows.map((r) => ({
    jobId: r.job_id,
    attemptNumber: r.attempt_number,
    owner: r.owner,
    inputRevision: r.input_revision,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    outcome: r.outcome,
    refunded: r.refunded,
    resultRevision: r.result_revision,
    errorCategory: r.error_category,
    errorDetail: r.error_detail,
    completedSegments: r.completed_segments,
    failedSegments: r.failed_segments,
    totalSegments: r.total_segments,
    stepWorkers: r.step_workers,
  }));
}

/** E2: correlation data carried by every item-scoped event of a job. */
export async function jobEventData(
  client: Queryable,
  jobId: string,
  extra: Record<string, unknown> = {},
): Promise<{ workspaceId: number; data: Record<string, unknown> }> {
  const { rows } = await client.query(
    `SELECT j.id, j.workspace_id, j.page_id, j.idempotency_key, j.external_reference_id, j.metadata,
            p.item_id, p.canvas_uri, p.revision
       FROM transcription_jobs j JOIN pages p ON p.id = j.page_id WHERE j.id = $1`,
    [jobId],
  );
  const r = rows[0];
  if (!r) throw new NotFoundError('job_not_found', `job ${jobId} not found`);
  return {
    workspaceId: r.workspace_id,
    data: {
      workspaceId: r.workspace_id,
      pageId: r.page_id,
      itemId: r.item_id,
      canvasUri: r.canvas_uri,
      revision: r.revision,
      externalReferenceId: r.external_reference_id,
      idempotencyKey: r.idempotency_key,
      metadata: r.metadata,
      jobId: r.id,
      ...extra,
    },
  };
}

async function appendJobEvent(
  client: PoolClient,
  jobId: string,
  type: string,
  extra: Record<string, unknown>,
) {
  const { workspaceId, data } = await jobEventData(client, jobId, extra);
  await appendEvent(client, { workspaceId, type, subject: `transcription-jobs/${jobId}`, data });
}

/** Marks a job failed (from an active status) with its completion-less failure event. */
export async function failJob(
  client: PoolClient,
  jobId: string,
  category: FailureClass,
  detail: string,
  attemptNumber: number | null,
): Promise<void> {
  const updated = await client.query(
    `UPDATE transcription_jobs SET status = 'failed', error_category = $2, error_detail = $3, ended_at = now(),
            updated_at = now(), stage = 'done'
      WHERE id = $1 AND status IN ${ACTIVE_STATUS_LIST}`,
    [jobId, category, detail],
  );
  if (updated.rowCount === 1) {
    await jobsEnded(client, [jobId]);
    await appendJobEvent(client, jobId, EVENT_TYPES.failed, {
      attemptNumber,
      errorCategory: category,
    });
  }
}

export interface CanceledJobs {
  /** Workflows to cancel now that their tokens are dead. */
  workflowIds: string[];
  canceledJobIds: string[];
}

async function cancelJobRows(client: PoolClient, jobIds: string[]): Promise<CanceledJobs> {
  if (jobIds.length === 0) return { workflowIds: [], canceledJobIds: [] };
  await client.query(
    `UPDATE transcription_job_attempts SET outcome = 'canceled', ended_at = now()
      WHERE job_id = ANY($1) AND outcome = 'running'`,
    [jobIds],
  );
  const { rows } = await client.query(
    `UPDATE transcription_jobs SET status = 'canceled', ended_at = now(), updated_at = now(), stage = 'done'
      WHERE id = ANY($1) AND status IN ${ACTIVE_STATUS_LIST} RETURNING id, workflow_id`,
    [jobIds],
  );
  await jobsEnded(
    client,
    rows.map((r) => r.id),
  );
  for (const row of rows) {
    await appendJobEvent(client, row.id, EVENT_TYPES.canceled, {});
  }
  return { workflowIds: rows.map((r) => r.workflow_id), canceledJobIds: rows.map((r) => r.id) };
}

/**
 * J5: cancels one job. Database first, in one transaction: the job becomes `canceled` and
 * its running attempt is closed, so its token dies before any workflow is told.
 */
export async function cancelJob(pool: Pool, workspaceId: number, jobId: string) {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `SELECT id, status, workflow_id FROM transcription_jobs WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
      [workspaceId, jobId],
    );
    const job = rows[0];
    if (!job) throw new NotFoundError('job_not_found', `job ${jobId} not found`);
    if (!isActiveStatus(job.status)) {
      throw new ConflictError('job_not_active', `job ${jobId} is already ${job.status}`);
    }
    return cancelJobRows(client, [jobId]);
  });
}

/** J5: cancels every active job of a batch in one transaction, then the caller cancels workflows. */
export async function cancelBatch(pool: Pool, workspaceId: number, batchId: string) {
  return withTransaction(pool, async (client) => {
    const batch = await client.query(
      `UPDATE batches SET status = 'canceled', canceled_at = coalesce(canceled_at, now())
        WHERE workspace_id = $1 AND id = $2 RETURNING id`,
      [workspaceId, batchId],
    );
    if (batch.rowCount === 0)
      throw new NotFoundError('batch_not_found', `batch ${batchId} not found`);
    const { rows } = await client.query(
      `SELECT id FROM transcription_jobs WHERE batch_id = $1 AND status IN ${ACTIVE_STATUS_LIST} ORDER BY id FOR UPDATE`,
      [batchId],
    );
    return cancelJobRows(
      client,
      rows.map((r) => r.id),
    );
  });
}

export async function markWorkflowStarted(db: Queryable, jobId: string): Promise<void> {
  await db.query(
    `UPDATE transcription_jobs SET workflow_started_at = coalesce(workflow_started_at, now()) WHERE id = $1`,
    [jobId],
  );
}

/**
 * J6: jobs whose row exists but whose workflow was never recorded as started. A job waiting
 * for a slot under its workspace's cap (M4) is not one: the dispatcher starts it when admitted.
 */
export async function findUnstartedJobs(db: Queryable, olderThanMs: number, limit = 100) {
  const { rows } = await db.query(
    `SELECT ${JOB_COLUMNS}, p.kind FROM transcription_jobs j JOIN pages p ON p.id = j.page_id
      WHERE j.workflow_started_at IS NULL AND j.status = 'pending' AND NOT j.awaiting_slot
        AND j.created_at < now() - ($1::text || ' milliseconds')::interval
      ORDER BY j.created_at LIMIT $2`,
    [String(olderThanMs), limit],
  );
  return rows.map((r) => ({ job: toJob(r), kind: r.kind as MediaKind }));
}

/**
 * Active jobs that call a provider, as their own or as their polish provider (M3), of one
 * workspace when given: to wake their workflows when it resumes.
 */
export async function activeWorkflowsForProvider(
  db: Queryable,
  provider: string,
  workspaceId?: number,
): Promise<string[]> {
  const { rows } = await db.query(
    `SELECT workflow_id FROM transcription_jobs
      WHERE status IN ${ACTIVE_STATUS_LIST} AND ($2::bigint IS NULL OR workspace_id = $2)
        AND (provider = $1 OR snapshot->'options'->>'polishProvider' = $1)`,
    [provider, workspaceId ?? null],
  );
  return rows.map((r) => r.workflow_id);
}

/**
 * Cancels a job by id if it is still active (a cancel that reached the workflow without
 * passing through `cancelJob`, e.g. from the Temporal UI). Returns the job's final status.
 */
export async function cancelJobIfActive(pool: Pool, jobId: string): Promise<JobStatus> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `SELECT status FROM transcription_jobs WHERE id = $1 FOR UPDATE`,
      [jobId],
    );
    const status = rows[0]?.status as JobStatus | undefined;
    if (!status) throw new NotFoundError('job_not_found', `job ${jobId} not found`);
    if (!isActiveStatus(status)) return status;
    await cancelJobRows(client, [jobId]);
    return 'canceled';
  });
}
