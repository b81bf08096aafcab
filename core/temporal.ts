/**
 * The Temporal contract of Quire, for integrators and for Quire's own processes: workflow,
 * signal and query names and their argument types, search attribute keys, task queue names.
 * Safe to import inside the workflow sandbox.
 */

import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { FailureClass } from './failures';
import type { MediaKind } from './media';

export const TRANSCRIPTION_WORKFLOW = 'transcriptionJob';
export const DEFAULT_TASK_QUEUE = 'quire-transcription';
/** The scheduled maintenance (O3) polls its own queue: it never waits behind page recognition. */
export const MAINTENANCE_TASK_QUEUE = 'quire-maintenance';

/**
 * M5: the fairness key of a workspace's job workflows. The Temporal server (matching with
 * `matching.enableFairness`) dispatches a backlogged task queue's tasks in proportion across
 * keys, so a workspace with thousands of queued pages takes its share, not the whole queue.
 * Activities inherit the key from their workflow. At most 64 bytes.
 */
export function fairnessKeyFor(workspaceId: number): string {
  return `workspace-${workspaceId}`;
}

/**
 * P8: interactive first. A page a person submits or re-runs is dispatched ahead of bulk work
 * on the same task queue: Temporal's priority key (lower first; 1-5 with the server's default
 * five levels, 3 when unset) is decided before the fairness key, so a person's page overtakes
 * every batch, its own workspace's too, while batches still share the rest fairly (M5).
 * Activities inherit it from their workflow.
 */
export const JOB_PRIORITIES = ['interactive', 'bulk'] as const;
export type JobPriority = (typeof JOB_PRIORITIES)[number];
export const PRIORITY_KEYS: Readonly<Record<JobPriority, number>> = { interactive: 1, bulk: 3 };

/**
 * P8: the task queue a job's workflow runs on. A person's page has a queue of its own beside
 * the bulk one, polled by every worker with its own workflow and activity slots: the priority
 * key orders a backlogged queue, but a worker's slots, once taken by bulk tasks, serve them
 * first come, first served, so a person's task also waits for one to free. On its own queue
 * it is taken at once. Its activities run there too (they inherit the workflow's queue).
 * Derived from the bulk queue's name, so no process of a fleet can disagree about it.
 */
export function jobTaskQueue(taskQueue: string, priority: JobPriority = 'bulk'): string {
  return priority === 'interactive' ? interactiveTaskQueue(taskQueue) : taskQueue;
}

const INTERACTIVE_SUFFIX = '-interactive';

export function interactiveTaskQueue(taskQueue: string): string {
  return `${taskQueue}${INTERACTIVE_SUFFIX}`;
}

/** Whether a task queue is the one a person's pages run on (`interactiveTaskQueue`). */
export function isInteractiveTaskQueue(taskQueue: string): boolean {
  return taskQueue.endsWith(INTERACTIVE_SUFFIX);
}

/** The Temporal priority of a job's workflow: its priority class and its workspace's share. */
export function jobPriorityFor(
  workspaceId: number,
  priority: JobPriority = 'bulk',
): { priorityKey: number; fairnessKey: string } {
  return { priorityKey: PRIORITY_KEYS[priority], fairnessKey: fairnessKeyFor(workspaceId) };
}

export const SIGNALS = {
  /** A provider this job waits on was resumed by an operator (Q3). */
  providerResumed: 'providerResumed',
} as const;

export const QUERIES = {
  /** Live progress of the job (stage, segments, attempt). */
  progress: 'progress',
} as const;

export const SEARCH_ATTRIBUTES = {
  workspaceId: defineSearchAttributeKey('QuireWorkspaceId', SearchAttributeType.INT),
  jobId: defineSearchAttributeKey('QuireJobId', SearchAttributeType.KEYWORD),
  pageId: defineSearchAttributeKey('QuirePageId', SearchAttributeType.INT),
  /** Upserted only by runs begun before D14: the job's status is read from the database. */
  status: defineSearchAttributeKey('QuireStatus', SearchAttributeType.KEYWORD),
  provider: defineSearchAttributeKey('QuireProvider', SearchAttributeType.KEYWORD),
};

export const JOB_STATUSES = [
  'pending',
  'running',
  'completed',
  'failed',
  'canceled',
  'superseded',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** A job in one of these statuses may still write: it holds its page (one active job per page). */
export const ACTIVE_STATUSES = ['pending', 'running'] as const satisfies readonly JobStatus[];
export type ActiveStatus = (typeof ACTIVE_STATUSES)[number];

export function isActiveStatus(status: string): status is ActiveStatus {
  return (ACTIVE_STATUSES as readonly string[]).includes(status);
}

/** How an attempt ended, or `running` while it holds its claim (A1). */
export const ATTEMPT_OUTCOMES = [
  'running',
  'completed',
  'retryable_failed',
  'failed',
  'canceled',
  'superseded',
  'lease_expired',
] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** Where a job stands: its live progress and `transcription_jobs.stage`. */
export const STAGES = [
  'queued',
  'segment',
  'recognize',
  'submit',
  'polish',
  'commit',
  'paused',
  'backoff',
  'done',
] as const;
export type Stage = (typeof STAGES)[number];

/** T2: the working stages of a job on each kind of page, in the order it passes them. */
export const STAGES_BY_KIND = {
  image: ['segment', 'recognize', 'polish', 'commit'],
  audio: ['submit', 'recognize', 'polish', 'commit'],
} as const satisfies Record<MediaKind, readonly Stage[]>;

/** Workflow input: everything the workflow needs, since it may not read config or the database. */
export interface TranscriptionJobInput {
  jobId: string;
  workspaceId: number;
  pageId: number;
  kind: MediaKind;
  provider: string;
  maxAttempts: number;
  polishAttempts: number;
  retryInitialMs: number;
  retryMaxMs: number;
  heartbeatTimeoutMs: number;
  /** How long one recognize activity runs before reporting back (default 10 s). */
  recognizeSliceMs?: number;
}

/** The settings of a job that its workflow input carries: attempts, polish, retries, timing. */
export type JobSettings = Required<
  Omit<TranscriptionJobInput, 'jobId' | 'workspaceId' | 'pageId' | 'kind' | 'provider'>
>;

/**
 * The defaults of the workflow input, the one source for the configuration's defaults
 * (core/config.ts), the client's (client/index.ts) and the workflow's own for an input
 * without `recognizeSliceMs` (runs started before it existed).
 */
export const JOB_DEFAULTS = {
  maxAttempts: 5,
  polishAttempts: 3,
  retryInitialMs: 2_000,
  retryMaxMs: 60_000,
  heartbeatTimeoutMs: 15_000,
  recognizeSliceMs: 10_000,
} as const satisfies JobSettings;

export interface JobProgress {
  jobId: string;
  status: JobStatus;
  stage: Stage;
  attemptNumber: number;
  completedSegments: number;
  failedSegments: number;
  totalSegments: number | null;
  pausedReason: FailureClass | null;
  errorCategory: FailureClass | null;
}

export interface TranscriptionJobResult {
  status: JobStatus;
  resultRevision: number | null;
  attempts: number;
  errorCategory: FailureClass | null;
}
