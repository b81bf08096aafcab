import type { JobRecord, JobStore } from '../core/jobStore';
import type { MediaKind } from '../core/media';
import { releaseIncompleteBatchPages } from './items';
import { admitWaitingJobs, workspacesWithWaitingJobs } from './jobSlots';
import {
  activeWorkflowsForProvider,
  cancelBatch,
  cancelJob,
  createJob,
  findUnstartedJobs,
  type JobRow,
  markWorkflowStarted,
} from './jobs';
import { activeJobsToCheck, settleLostJob, type WorkflowState } from './lostWorkflows';
import { providersEnabledFor } from './operatorControls';
import type { Pool } from './pool';
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

/** The PostgreSQL implementation of the client's job store port. */
export function createJobStore(pool: Pool): JobStore {
  return {
    async createJob(input) {
      const created = await createJob(pool, input);
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
      const rows = await admitWaitingJobs(pool, workspaceId);
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
