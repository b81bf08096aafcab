import type { JobRecord, JobStore } from '../core/jobStore';
import type { MediaKind } from '../core/media';
import { releaseIncompleteBatchPages } from './items';
import { admitWaitingJobs, workspacesWithWaitingJobs } from './jobSlots';
import {
  activeWorkflowsForProvider,
  type CreatedJob,
  cancelBatch,
  cancelJob,
  createJob,
  findUnstartedJobs,
  isJobKeyRace,
  type JobRow,
  markWorkflowStarted,
  type NewJob,
} from './jobs';
import { activeJobsToCheck, settleLostJob, type WorkflowState } from './lostWorkflows';
import { providersEnabledFor } from './operatorControls';
import { type Pool, withTransaction } from './pool';
import { resumeProvider } from './providerState';

function record(job: JobRow, kind: MediaKind): JobRecord {
  return {
    id: job.id,
    workflowId: job.workflowId,
    workspaceId: job.workspaceId,
    pageId: job.pageId,
    kind,
    provider: job.provider,
    status: job.status,
    batchId: job.batchId,
    awaitingSlot: job.awaitingSlot,
    priority: job.priority,
  };
}

/**
 * J6: a job created in its own transaction; a concurrent request with the same idempotency
 * key that won the insert is found by running the transaction once more.
 */
async function createJobInTransaction(pool: Pool, input: NewJob): Promise<CreatedJob> {
  for (let tries = 0; ; tries++) {
    try {
      return await withTransaction(pool, (client) => createJob(client, input));
    } catch (error) {
      if (tries === 0 && isJobKeyRace(error)) continue;
      throw error;
    }
  }
}

/** The PostgreSQL implementation of the client's job store port. */
export function createJobStore(
  pool: Pool,
  /** D14: QUIRE_FLEET_MAX_OPEN_WORKFLOWS; unset, bulk jobs are not paced. */
  pace: { fleetMaxOpenWorkflows?: number } = {},
): JobStore {
  const fleetMaxOpen = pace.fleetMaxOpenWorkflows ?? null;
  return {
    async createJob(input) {
      const created = await createJobInTransaction(pool, {
        ...input,
        fleetPaced: fleetMaxOpen !== null,
      });
      return {
        job: record(created.job, created.kind),
        created: created.created,
        supersededWorkflowId: created.superseded?.workflowId ?? null,
      };
    },
    markWorkflowStarted: (jobId) => markWorkflowStarted(pool, jobId),
    cancelJob: (workspaceId, jobId) => cancelJob(pool, workspaceId, jobId),
    cancelBatch: (workspaceId, batchId) => cancelBatch(pool, workspaceId, batchId),
    releaseIncompleteBatch: (workspaceId, batchId) =>
      releaseIncompleteBatchPages(pool, workspaceId, batchId),
    resumeProvider: (provider, workspaceId) => resumeProvider(pool, provider, workspaceId),
    providersEnabledFor: (workspaceId) => providersEnabledFor(pool, workspaceId),
    activeWorkflowsForProvider: (provider, workspaceId) =>
      activeWorkflowsForProvider(pool, provider, workspaceId),
    async findUnstartedJobs(olderThanMs, limit) {
      const rows = await findUnstartedJobs(pool, olderThanMs, limit);
      return rows.map((r) => record(r.job, r.kind));
    },
    async admitWaitingJobs(workspaceId) {
      const rows = await admitWaitingJobs(pool, workspaceId, fleetMaxOpen);
      return rows.map((r) => record(r.job, r.kind));
    },
    workspacesWithWaitingJobs: () => workspacesWithWaitingJobs(pool),
    async activeJobsToCheck(olderThanMs, limit) {
      const rows = await activeJobsToCheck(pool, olderThanMs, limit);
      return rows.map((r) => record(r.job, r.kind));
    },
    settleLostJob: (jobId, workflowStatus) =>
      settleLostJob(pool, jobId, workflowStatus as WorkflowState),
  };
}
