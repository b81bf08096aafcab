import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
} from '@temporalio/client';
import { z } from 'zod';
import { jobSettingsOf, type QuireConfig } from '../core/config';
import type { EngineModel } from '../core/engineModels';
import { DomainError } from '../core/errors';
import { workflowIdForJob } from '../core/ids';
import { checkJobRequest, chooseJobEngine, providersForWorkspace } from '../core/jobOptions';
import { jobRequestFields } from '../core/jobRequest';
import type { JobRecord, JobStore } from '../core/jobStore';
import { buildSnapshot, pricesWith } from '../core/pricing';
import type { JobSnapshot } from '../core/provider';
import { AUTO_PROVIDER, enabledProviders, KNOWN_PROVIDERS } from '../core/providerCatalogue';
import {
  DEFAULT_TASK_QUEUE,
  JOB_DEFAULTS,
  type JobPriority,
  type JobProgress,
  jobPriorityFor,
  jobTaskQueue,
  QUERIES,
  SEARCH_ATTRIBUTES,
  SIGNALS,
  TRANSCRIPTION_WORKFLOW,
  type TranscriptionJobInput,
} from '../core/temporal';

/**
 * The typed Temporal client of Quire, for integrators and for Quire's own web app (SPEC §8).
 * A job is recorded first (through the job store), then its workflow is started; a crash
 * between the two is repaired by the reconciler (J6), which calls `startRecordedJob`.
 */
export {
  type JobProgress,
  QUERIES,
  SEARCH_ATTRIBUTES,
  SIGNALS,
  TRANSCRIPTION_WORKFLOW,
  type TranscriptionJobInput,
} from '../core/temporal';

export class InvalidJobRequestError extends DomainError {
  override name = 'InvalidJobRequestError';
  constructor(readonly issues: string[]) {
    super('invalid_job_request', `invalid job request: ${issues.join('; ')}`);
  }
}

export const startJobSchema = z.object({
  workspaceId: z.number().int().positive(),
  pageId: z.number().int().positive(),
  ...jobRequestFields,
  batchId: z.string().min(1).optional(),
});

export type StartJobRequest = z.input<typeof startJobSchema>;

export interface StartedJob {
  jobId: string;
  workflowId: string;
  status: string;
  /** False when an idempotency key returned an existing job. */
  created: boolean;
}

export interface QuireClientOptions {
  temporal: Client;
  jobs: JobStore;
  taskQueue?: string;
  maxAttempts?: number;
  polishAttempts?: number;
  retryInitialMs?: number;
  retryMaxMs?: number;
  heartbeatTimeoutMs?: number;
  recognizeSliceMs?: number;
  defaultProvider?: string;
  /**
   * M2: the providers this installation offers; a job naming another (as its provider or its
   * polish provider), or carrying simulated options without `simulated` among them, is
   * refused before anything is written.
   */
  providers?: readonly string[];
  /**
   * V9: the models this installation has; a job whose language has none is refused with
   * `model_not_installed` before anything is written. Absent: languages are not checked.
   */
  models?: () => readonly EngineModel[];
  /** Builds the job's immutable context snapshot (prices come from the operator's table). */
  snapshot: (request: z.output<typeof startJobSchema> & { provider: string }) => JobSnapshot;
}

export class QuireClient {
  private readonly taskQueue: string;

  /**
   * The client as Quire's own processes build it from configuration: it offers the providers
   * the catalogue enables under that configuration (M2).
   */
  static fromConfig(
    config: QuireConfig,
    temporal: Client,
    jobs: JobStore,
    providers: readonly string[] = enabledProviders(config).map((entry) => entry.name),
    models?: () => readonly EngineModel[],
  ): QuireClient {
    return new QuireClient({
      temporal,
      jobs,
      taskQueue: config.QUIRE_TASK_QUEUE,
      ...jobSettingsOf(config),
      defaultProvider: config.QUIRE_DEFAULT_PROVIDER,
      providers,
      models,
      snapshot: (request) =>
        buildSnapshot({
          provider: request.provider,
          model: request.model,
          language: request.language,
          options: request.options,
          prices: pricesWith(config.QUIRE_PRICES),
        }),
    });
  }

  constructor(private readonly options: QuireClientOptions) {
    this.taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
  }

  /** Validates, records and starts a transcription job; returns its ids (J4, J6). */
  async startJob(request: StartJobRequest): Promise<StartedJob> {
    const parsed = startJobSchema.safeParse(request);
    if (!parsed.success) {
      throw new InvalidJobRequestError(
        parsed.error.issues.map((i) => `${i.path.join('.') || 'request'}: ${i.message}`),
      );
    }
    const input = parsed.data;
    const provider = input.provider ?? this.options.defaultProvider ?? AUTO_PROVIDER;
    const enabled = providersForWorkspace(
      this.options.providers ?? KNOWN_PROVIDERS,
      await this.options.jobs.providersEnabledFor(input.workspaceId),
    );
    checkJobRequest({ provider, options: input.options }, enabled);
    const { job, created, supersededWorkflowId } = await this.options.jobs.createJob({
      workspaceId: input.workspaceId,
      pageId: input.pageId,
      snapshot: (kind, inherited) => {
        // Thrown inside the job's transaction: nothing is written.
        const chosen = chooseJobEngine({
          request: input,
          options: input.options,
          inherited,
          defaultProvider: provider,
          kind,
          enabled,
          models: this.options.models?.(),
        });
        return this.options.snapshot({ ...input, ...chosen });
      },
      batchId: input.batchId ?? null,
      idempotencyKey: input.idempotencyKey ?? null,
      externalReferenceId: input.externalReferenceId ?? null,
      metadata: input.metadata ?? {},
      priority: input.priority,
    });
    if (supersededWorkflowId) await this.cancelWorkflow(supersededWorkflowId);
    if (job.awaitingSlot) await this.dispatchWaitingJobs(job.workspaceId);
    else if (created || job.status === 'pending') await this.startRecordedJob(job);
    return { jobId: job.id, workflowId: job.workflowId, status: job.status, created };
  }

  /**
   * Starts the workflows of jobs recorded together (an ingest): those admitted now, then, for
   * any waiting under their workspace's cap (M4), the dispatch of that workspace. Each starts
   * with the priority it was recorded with (P8: a person's console upload is `interactive`).
   */
  async startRecordedJobs(jobs: JobRecord[]): Promise<void> {
    const waiting = new Set<number>();
    for (const job of jobs) {
      if (job.awaitingSlot) waiting.add(job.workspaceId);
      else await this.startRecordedJob(job);
    }
    for (const workspaceId of waiting) await this.dispatchWaitingJobs(workspaceId);
  }

  /**
   * M4: admits the oldest jobs waiting under a workspace's active-job cap into its free slots
   * and starts their workflows. Safe to run anywhere at any time: admission is serialised per
   * workspace in PostgreSQL, and a start is idempotent. Returns how many were admitted.
   */
  async dispatchWaitingJobs(workspaceId: number): Promise<number> {
    const admitted = await this.options.jobs.admitWaitingJobs(workspaceId);
    for (const job of admitted) await this.startRecordedJob(job);
    return admitted.length;
  }

  /** M4: the workspaces that have jobs waiting for a slot (the dispatcher's poll). */
  workspacesWithWaitingJobs(): Promise<number[]> {
    return this.options.jobs.workspacesWithWaitingJobs();
  }

  /**
   * Starts the workflow of a recorded job; "already started" counts as success. A job still
   * waiting for a slot (M4) is left to the dispatcher. `continued`: a new run of a job whose
   * previous run ended without it (D4); allowed only when that run failed, was terminated,
   * timed out or was canceled.
   */
  async startRecordedJob(
    job: JobRecord,
    options: { continued?: boolean; priority?: JobPriority } = {},
  ): Promise<void> {
    if (job.awaitingSlot) return;
    const input: TranscriptionJobInput = {
      jobId: job.id,
      workspaceId: job.workspaceId,
      pageId: job.pageId,
      kind: job.kind,
      provider: job.provider,
      maxAttempts: this.options.maxAttempts ?? JOB_DEFAULTS.maxAttempts,
      polishAttempts: this.options.polishAttempts ?? JOB_DEFAULTS.polishAttempts,
      retryInitialMs: this.options.retryInitialMs ?? JOB_DEFAULTS.retryInitialMs,
      retryMaxMs: this.options.retryMaxMs ?? JOB_DEFAULTS.retryMaxMs,
      heartbeatTimeoutMs: this.options.heartbeatTimeoutMs ?? JOB_DEFAULTS.heartbeatTimeoutMs,
      recognizeSliceMs: this.options.recognizeSliceMs ?? JOB_DEFAULTS.recognizeSliceMs,
    };
    const priority = options.priority ?? job.priority;
    try {
      await this.options.temporal.workflow.start(TRANSCRIPTION_WORKFLOW, {
        taskQueue: jobTaskQueue(this.taskQueue, priority),
        workflowId: job.workflowId,
        args: [input],
        // One job, one run: a finished job's workflow id is never reused, except by the
        // reconciler for a job whose run ended without it (D4).
        workflowIdReusePolicy: options.continued
          ? 'ALLOW_DUPLICATE_FAILED_ONLY'
          : 'REJECT_DUPLICATE',
        // P8: a person's page first; M5: each workspace its share of the rest. The job's
        // activities inherit both.
        priority: jobPriorityFor(job.workspaceId, priority),
        // Not the job's status (D14): Quire's database holds it, and the run upserting it
        // cost a billable action each time it changed.
        typedSearchAttributes: [
          { key: SEARCH_ATTRIBUTES.workspaceId, value: job.workspaceId },
          { key: SEARCH_ATTRIBUTES.jobId, value: job.id },
          { key: SEARCH_ATTRIBUTES.pageId, value: job.pageId },
          { key: SEARCH_ATTRIBUTES.provider, value: job.provider },
        ],
        memo: {
          workspaceId: job.workspaceId,
          pageId: job.pageId,
          kind: job.kind,
          batchId: job.batchId,
        },
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    await this.options.jobs.markWorkflowStarted(job.id);
  }

  /** Live progress of a job (workflow query). */
  async getProgress(jobId: string, workflowId?: string): Promise<JobProgress> {
    const handle = this.options.temporal.workflow.getHandle(workflowId ?? workflowIdForJob(jobId));
    return handle.query<JobProgress>(QUERIES.progress);
  }

  /** J5: the database first (tokens die), then the workflow. */
  async cancelJob(workspaceId: number, jobId: string): Promise<{ canceled: number }> {
    const { workflowIds } = await this.options.jobs.cancelJob(workspaceId, jobId);
    await Promise.all(workflowIds.map((id) => this.cancelWorkflow(id)));
    return { canceled: workflowIds.length };
  }

  /**
   * J5: every active job of the batch in one transaction (their tokens die), then the batch's
   * uploads that never got a transcript go to cleanup, then the workflows are told. The
   * release depends only on the database: a workflow the cancel does not reach (Temporal
   * unavailable for that call) cannot write any more, and stops at its next fenced step.
   */
  async cancelBatch(
    workspaceId: number,
    batchId: string,
  ): Promise<{ canceled: number; releasedPages: number }> {
    const { workflowIds } = await this.options.jobs.cancelBatch(workspaceId, batchId);
    const { pages } = await this.options.jobs.releaseIncompleteBatch(workspaceId, batchId);
    await Promise.allSettled(workflowIds.map((id) => this.cancelWorkflow(id)));
    return { canceled: workflowIds.length, releasedPages: pages };
  }

  /**
   * Q3, M3: a Resume; wakes every workflow waiting on the provider. Without `workspaceId`, an
   * operator's: every pause of the provider. With it, a workspace's: only the pause of its own
   * credentials, and only its own workflows are woken. Who may do which is the caller's check
   * (core/providerCatalogue's `credentialScope`).
   */
  async resumeProvider(
    provider: string,
    workspaceId?: number,
  ): Promise<{ resumed: boolean; woken: number }> {
    const resumed = await this.options.jobs.resumeProvider(provider, workspaceId);
    const workflowIds = await this.options.jobs.activeWorkflowsForProvider(provider, workspaceId);
    let woken = 0;
    for (const id of workflowIds) {
      try {
        await this.options.temporal.workflow
          .getHandle(id)
          .signal(SIGNALS.providerResumed, { provider });
        woken += 1;
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }
    return { resumed, woken };
  }

  /** J6: starts the workflows of jobs recorded but never started. */
  async reconcile(olderThanMs: number, limit = 100): Promise<{ started: number }> {
    const jobs = await this.options.jobs.findUnstartedJobs(olderThanMs, limit);
    for (const job of jobs) await this.startRecordedJob(job);
    return { started: jobs.length };
  }

  /**
   * D4: compares active jobs with their workflows in Temporal. A job whose workflow was
   * terminated, failed, timed out or lost is continued in a new run, which claims the next
   * attempt (closing the orphaned one `lease_expired`) and resumes from the checkpoints; one
   * canceled in Temporal is recorded canceled; one whose workflow completed while the job is
   * active, or that keeps losing its workflow, is failed `internal` with the reason stated.
   */
  async reconcileLostWorkflows(
    olderThanMs: number,
    limit = 200,
  ): Promise<{ checked: number; continued: number; canceled: number; failed: number }> {
    const jobs = this.options.jobs;
    const counts = { checked: 0, continued: 0, canceled: 0, failed: 0 };
    if (!jobs.activeJobsToCheck || !jobs.settleLostJob) return counts;
    for (const job of await jobs.activeJobsToCheck(olderThanMs, limit)) {
      let status: string;
      try {
        const described = await this.options.temporal.workflow.getHandle(job.workflowId).describe();
        status = described.status.name;
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
        status = 'NOT_FOUND';
      }
      counts.checked += 1;
      const settled = await jobs.settleLostJob(job.id, status);
      if (settled === 'continue') {
        await this.startRecordedJob(job, { continued: true });
        counts.continued += 1;
      } else if (settled === 'canceled') counts.canceled += 1;
      else if (settled === 'failed') counts.failed += 1;
    }
    return counts;
  }

  private async cancelWorkflow(workflowId: string): Promise<void> {
    try {
      await this.options.temporal.workflow.getHandle(workflowId).cancel();
    } catch (error) {
      // A workflow that already finished or never started needs no cancelling: the database
      // already says what happened, and no token of it can write again.
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }
}
