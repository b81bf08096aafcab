import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Context } from '@temporalio/activity';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { RecognizeOutcome } from '../../activities/transcription';
import { KEY_MISMATCH } from '../../core/failures';
import {
  type JobProgress,
  QUERIES,
  TRANSCRIPTION_WORKFLOW,
  type TranscriptionJobInput,
  type TranscriptionJobResult,
} from '../../core/temporal';
import { WORKER_GRPC_COMPRESSION } from '../../core/temporalConnection';
import type { JobSteps } from '../../workflows/activityProfiles';
import { patchIdsOf, recordedHistoryFile } from '../support/histories';

/**
 * Workflow tests: the real workflow bundle on the run's Temporal dev server, its activities
 * replaced by in-memory mocks, so the story's branches (pause, backoff, polish fallback,
 * cancellation, key faults, interrupted attempts) are proven in seconds. Each test runs its
 * own worker on its own task queue.
 */
export type Step = keyof JobSteps;

export interface StepCall {
  step: Step;
  args: unknown[];
  /** Whether the step ran as a local activity (claim and commit may, D1 falls back). */
  local: boolean;
}

export interface JobRun {
  handle: WorkflowHandle;
  /** The workflow's result, or the error its run ended with (a cancel). */
  outcome: TranscriptionJobResult | Error;
  calls: StepCall[];
  history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
  /** M5: the job ids the run told its worker to release from its hand (a sink). */
  released: string[];
}

let connection: NativeConnection | undefined;
let clientConnection: Connection | undefined;
let client: Client | undefined;

function address(): string {
  const value = process.env.QUIRE_TEST_TEMPORAL_ADDRESS;
  if (!value) throw new Error('no Temporal dev server: run through the workflow project');
  return value;
}

async function connect(): Promise<{ connection: NativeConnection; client: Client }> {
  connection ??= await NativeConnection.connect({
    address: address(),
    grpcCompression: WORKER_GRPC_COMPRESSION,
  });
  clientConnection ??= await Connection.connect({ address: address() });
  client ??= new Client({ connection: clientConnection });
  return { connection, client };
}

export async function closeConnections(): Promise<void> {
  await clientConnection?.close();
  await connection?.close();
  clientConnection = undefined;
  connection = undefined;
  client = undefined;
}

export const recognized = (total: number): RecognizeOutcome => ({
  total,
  completed: total,
  failures: [],
  remaining: 0,
  pause: null,
});

/** The failure an activity raises when the attempt's token does not open on its worker (D1). */
export function keyMismatch(): ApplicationFailure {
  return ApplicationFailure.create({
    type: KEY_MISMATCH,
    message: 'attempt token does not open with this key',
    nonRetryable: true,
  });
}

/** A classified failure as the activity boundary raises it (Q3). */
export function classified(type: string, details?: unknown[]): ApplicationFailure {
  return ApplicationFailure.create({
    type,
    message: `${type} failure`,
    nonRetryable: true,
    details,
  });
}

/**
 * Steps that succeed: each claim is the next attempt (charged as many as its number), the
 * page has two lines, everything commits.
 */
function succeedingSteps(kind: 'image' | 'audio'): JobSteps {
  let attempts = 0;
  return {
    async claimAttempt(input) {
      attempts += 1;
      return {
        state: 'claimed',
        ref: { jobId: input.jobId, attemptNumber: attempts, sealedToken: `token-${attempts}` },
        kind,
        chargedAttempts: attempts,
      };
    },
    segmentPage: async () => ({ total: 2 }),
    recognizeSegments: async () => recognized(2),
    submitAudio: async () => ({ engineJobId: 'engine-job' }),
    awaitAudio: async () => recognized(2),
    polishSegments: async () => ({ polished: true }),
    commitTranscript: async () => ({ state: 'committed', revision: 1 }),
    pauseProvider: async () => ({ resumeAtMs: null, episode: 1, newEpisode: true }),
    closeAttempt: async () => ({ jobStatus: 'pending' }),
    cancelCleanup: async () => ({ jobStatus: 'canceled' }),
    stepFinished: async () => ({ finished: false }),
  };
}

/**
 * Runs one job's workflow to its end on a fresh task queue, with `steps` over the succeeding
 * ones; `during` runs beside it (to signal, query or cancel).
 */
export async function runJob(
  steps: Partial<JobSteps>,
  options: {
    input?: Partial<TranscriptionJobInput>;
    during?: (handle: WorkflowHandle, calls: StepCall[]) => Promise<void>;
  } = {},
): Promise<JobRun> {
  const { connection, client } = await connect();
  const id = randomBytes(5).toString('hex');
  const input: TranscriptionJobInput = {
    jobId: `job-${id}`,
    workspaceId: 1,
    pageId: 1,
    kind: 'image',
    provider: 'simulated',
    maxAttempts: 5,
    polishAttempts: 3,
    retryInitialMs: 50,
    retryMaxMs: 200,
    heartbeatTimeoutMs: 10_000,
    recognizeSliceMs: 1_000,
    ...options.input,
  };
  const calls: StepCall[] = [];
  const released: string[] = [];
  const all = { ...succeedingSteps(input.kind), ...steps };
  const activities = Object.fromEntries(
    Object.entries(all).map(([step, run]) => [
      step,
      (...args: unknown[]) => {
        calls.push({ step: step as Step, args, local: Context.current().info.isLocal });
        return (run as (...a: unknown[]) => Promise<unknown>)(...args);
      },
    ]),
  );
  const codePath = process.env.QUIRE_TEST_WORKFLOW_BUNDLE;
  if (!codePath) throw new Error('no workflow bundle: run through the workflow project');
  const worker = await Worker.create({
    connection,
    taskQueue: `wf-test-${id}`,
    workflowBundle: { codePath },
    activities,
    sinks: {
      pagesInHand: {
        release: { fn: (_info: unknown, jobId: string) => void released.push(jobId) },
      },
    },
    // A cancel reaches a heartbeating mock at once; a stuck one is stopped at shutdown.
    maxHeartbeatThrottleInterval: '100ms',
    shutdownGraceTime: '1s',
  });
  const { handle, outcome } = await worker.runUntil(async () => {
    const handle = await client.workflow.start(TRANSCRIPTION_WORKFLOW, {
      taskQueue: `wf-test-${id}`,
      workflowId: `transcription-job-${input.jobId}`,
      args: [input],
    });
    const beside = options.during?.(handle, calls);
    const outcome = await handle.result().catch((error: Error) => error);
    await beside;
    return { handle, outcome };
  });
  return { handle, outcome, calls, released, history: await handle.fetchHistory() };
}

/** The calls of one step, in order, by their arguments. */
export function callsOf(run: { calls: StepCall[] }, step: Step): unknown[][] {
  return run.calls.filter((c) => c.step === step).map((c) => c.args);
}

export function progressOf(handle: WorkflowHandle): Promise<JobProgress> {
  return handle.query<JobProgress>(QUERIES.progress);
}

/** The durations of the timers the run started, in order. */
export function timersMs(run: JobRun): number[] {
  return (run.history.events ?? [])
    .map((e) => e.timerStartedEventAttributes?.startToFireTimeout)
    .filter((d) => d != null)
    .map((d) => tsToMs(d));
}

/** The patch ids whose markers the run recorded. */
export function patchMarkers(run: JobRun): string[] {
  return patchIdsOf(run.history);
}

/**
 * QUIRE_RECORD_HISTORIES=1 keeps the run's history as a fixture that the replay test
 * (test/integration/replay.test.ts) replays against every later workflow code.
 */
export function keepHistory(run: JobRun, name: string): void {
  if (process.env.QUIRE_RECORD_HISTORIES !== '1') return;
  // The CLI writes the same JSON an operator gets from `temporal workflow show -o json`.
  const json = execFileSync(process.env.QUIRE_TEMPORAL_BIN_RESOLVED ?? 'temporal', [
    'workflow',
    'show',
    '--workflow-id',
    run.handle.workflowId,
    '--address',
    address(),
    '--output',
    'json',
  ]);
  writeFileSync(recordedHistoryFile(name), json);
}
