import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/common';
import type { PauseRequest, SegmentFailure } from '../activities/transcription';
import {
  CONFIG_MISMATCH,
  type FailureClass,
  INFRASTRUCTURE_FAULT,
  isFailureClass,
  isPausing,
  isPermanent,
  KEY_MISMATCH,
  STALE_ATTEMPT,
} from '../core/failures';

/**
 * How the workflow reads a failed step (Q3). Activities throw `ApplicationFailure`s whose
 * `type` is a failure class or an attempt fact (`StaleAttempt`, `SecretKeyMismatch`); anything
 * else (a timeout, a worker that went away) has no type and reads as an interrupted attempt.
 * Every step's failure is read once, by `classifyStepFailure`, into one outcome the story and
 * the step wrappers branch on. Pure, so that it has unit tests of its own.
 */

/** A step that timed out: its activity id and the worker's clock at its last recorded beat. */
export interface TimedOutStep {
  activityId: string;
  lastHeartbeatAt: number | null;
}

/**
 * What a failed step means for the attempt:
 * - `keyFault` (D1, D8): it ran on a worker configured unlike the fleet; the same attempt runs
 *   again elsewhere, uncharged.
 * - `infrastructure` (D7): Quire's own PostgreSQL, object store or Temporal was away; the same
 *   attempt runs again once it is back, uncharged.
 * - `stale`: the attempt's token is dead; the next claim finds out what became of the job.
 * - `failed` (Q3): a failure class, with the pause it asks for when it pauses its provider.
 * - `interrupted`: anything else, the step's worker died or shut down; `timedOut` when the step
 *   timed out, which D7 may yet judge the outage's (workflows/outages.ts).
 */
export type StepFailure =
  | { kind: 'keyFault' }
  | { kind: 'infrastructure' }
  | { kind: 'stale' }
  | { kind: 'failed'; failureClass: FailureClass; pause: PauseRequest | null }
  | { kind: 'interrupted'; timedOut: TimedOutStep | null };

/** A step that failed with a failure class (Q3). */
export type FailedStep = Extract<StepFailure, { kind: 'failed' }>;

/** The faults that are neither the job's nor the attempt's: the same attempt runs again. */
export type Rerun = Extract<StepFailure, { kind: 'keyFault' | 'infrastructure' }>;

export function classifyStepFailure(error: unknown): StepFailure {
  const type = failureType(error);
  if (type === KEY_MISMATCH || type === CONFIG_MISMATCH) return { kind: 'keyFault' };
  if (type === INFRASTRUCTURE_FAULT) return { kind: 'infrastructure' };
  if (type === STALE_ATTEMPT) return { kind: 'stale' };
  if (isFailureClass(type))
    return {
      kind: 'failed',
      failureClass: type,
      pause: isPausing(type) ? pauseOf(type, error) : null,
    };
  return { kind: 'interrupted', timedOut: timedOutStep(error) ?? null };
}

/** Whether an outcome (a step's failure, a claim, an attempt's end) is a fault to run again. */
export function isRerun<T extends object>(outcome: T | Rerun): outcome is Rerun {
  const { kind } = outcome as { kind?: unknown };
  return kind === 'keyFault' || kind === 'infrastructure';
}

/** The application failure a step failed with, as Temporal delivers it to the workflow. */
function applicationFailureOf(error: unknown): ApplicationFailure | undefined {
  if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure)
    return error.cause;
  // A local activity that fails while its worker shuts down reaches the workflow unwrapped.
  if (error instanceof ApplicationFailure) return error;
  return undefined;
}

/** The failure's type: a failure class, `StaleAttempt`, `SecretKeyMismatch`, or undefined. */
export function failureType(error: unknown): string | undefined {
  return applicationFailureOf(error)?.type ?? undefined;
}

/**
 * D1: the step ran on a worker whose keys do not open the attempt's token; D8: or on one
 * whose blob store is not the fleet's. Either is the fleet's configuration, not the job's.
 */
export function isKeyFault(error: unknown): boolean {
  return classifyStepFailure(error).kind === 'keyFault';
}

/** D7: the step stopped because Quire's own PostgreSQL, object store or Temporal was away. */
export function isInfrastructureFault(error: unknown): boolean {
  return classifyStepFailure(error).kind === 'infrastructure';
}

/**
 * D7: a step that timed out (its heartbeat or its run time): its activity id, which the
 * workflow asks the database about, and the worker's clock at the last heartbeat the server
 * recorded (activities/attemptContext.ts puts `at` in every heartbeat); undefined for any
 * other failure.
 */
export function timedOutStep(error: unknown): TimedOutStep | undefined {
  if (!(error instanceof ActivityFailure) || !(error.cause instanceof TimeoutFailure))
    return undefined;
  if (error.activityId === undefined) return undefined;
  const details = error.cause.lastHeartbeatDetails as { at?: unknown } | null | undefined;
  const at = typeof details?.at === 'number' ? details.at : null;
  return { activityId: error.activityId, lastHeartbeatAt: at };
}

/** The pause a pausing failure asks for, from the details the activity boundary attached. */
export function pauseOf(type: string, error: unknown): PauseRequest {
  const details = applicationFailureOf(error)?.details?.[0] as
    | { retryAfterMs?: number | null; scope?: 'provider' | 'workspace' }
    | undefined;
  return {
    reason: type as PauseRequest['reason'],
    retryAfterMs: details?.retryAfterMs ?? null,
    scope: details?.scope,
  };
}

/** The category of an attempt where nothing succeeded: permanent only if every failure was. */
export function attemptCategory(failures: SegmentFailure[]): FailureClass {
  const retryable = failures.find((f) => !isPermanent(f.category));
  return (retryable ?? failures[0])?.category ?? 'internal';
}
