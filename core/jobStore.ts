/**
 * The port through which the typed client records jobs before it starts their workflows.
 * `db/jobStore.ts` implements it over PostgreSQL; the client itself holds no SQL.
 */
import type { MediaKind } from './media';
import type { SnapshotFor } from './pricing';
import type { JobPriority, JobStatus } from './temporal';

export interface JobRecord {
  id: string;
  workflowId: string;
  workspaceId: number;
  pageId: number;
  kind: MediaKind;
  provider: string;
  status: JobStatus;
  batchId: string | null;
  /** M4: over its workspace's active-job cap; its workflow starts when a slot is admitted. */
  awaitingSlot?: boolean;
  /** P8: as it was asked for; every start of its workflow uses it. Unset: bulk. */
  priority?: JobPriority;
}

export interface NewJobRecord {
  workspaceId: number;
  pageId: number;
  snapshot: SnapshotFor;
  batchId?: string | null;
  idempotencyKey?: string | null;
  externalReferenceId?: string | null;
  metadata?: Record<string, unknown>;
  priority?: JobPriority;
  /**
   * D14: the installation paces bulk jobs (QUIRE_FLEET_MAX_OPEN_WORKFLOWS): a bulk job waits
   * for admission (`awaiting_slot`) instead of starting its workflow when recorded.
   */
  fleetPaced?: boolean;
}

export interface JobStore {
  /** J4/J6: returns the existing job for a repeated idempotency key; supersedes an active one. */
  createJob(
    input: NewJobRecord,
  ): Promise<{ job: JobRecord; created: boolean; supersededWorkflowId: string | null }>;
  markWorkflowStarted(jobId: string): Promise<void>;
  cancelJob(workspaceId: number, jobId: string): Promise<{ workflowIds: string[] }>;
  cancelBatch(workspaceId: number, batchId: string): Promise<{ workflowIds: string[] }>;
  /** J5: once the cancel has committed, the batch's never-transcribed uploads go to cleanup. */
  releaseIncompleteBatch(workspaceId: number, batchId: string): Promise<{ pages: number }>;
  /** M3: `workspaceId` resumes that workspace's own pause only; without, every pause (operators). */
  resumeProvider(provider: string, workspaceId?: number): Promise<boolean>;
  /** M4: the providers operators enabled for the workspace, or null for all the installation's. */
  providersEnabledFor(workspaceId: number): Promise<readonly string[] | null>;
  /** Active jobs calling the provider (as main or polish provider), of one workspace when given. */
  activeWorkflowsForProvider(provider: string, workspaceId?: number): Promise<string[]>;
  findUnstartedJobs(olderThanMs: number, limit: number): Promise<JobRecord[]>;
  /** M4: admits a workspace's oldest waiting jobs into its free slots; returns them, to start. */
  admitWaitingJobs(workspaceId: number): Promise<JobRecord[]>;
  /** M4: the workspaces that have jobs waiting for a slot. */
  workspacesWithWaitingJobs(): Promise<number[]>;
  /** D4: active jobs whose workflow started, the least recently checked against Temporal first. */
  activeJobsToCheck?(olderThanMs: number, limit: number): Promise<JobRecord[]>;
  /**
   * D4: settles a job against what Temporal says of its workflow (`RUNNING`, `TERMINATED`,
   * `NOT_FOUND`, ...): `continue` means start a new run, which resumes from checkpoints.
   */
  settleLostJob?(
    jobId: string,
    workflowStatus: string,
  ): Promise<'still-running' | 'finished' | 'continue' | 'canceled' | 'failed'>;
}
