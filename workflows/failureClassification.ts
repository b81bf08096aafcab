import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/common';
import type { PauseRequest, SegmentFailure } from '../activities/transcription';
import {
  CONFIG_MISMATCH,
  type FailureClass,
  INFRASTRUCTURE_FAULT,
  isPermanent,
  KEY_MISMATCH,
} from '../core/failures';

/**
 * How the workflow reads a failed step (Q3). Activities throw `ApplicationFailure`s whose
 * `type` is a failure class or an attempt fact (`StaleAttempt`, `SecretKeyMismatch`); anything
 * else (a timeout, a worker that went away) has no type and reads as an interrupted attempt.
 * Pure, so that it has unit tests of its own.
 */

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
  const type = failureType(error);
  return type === KEY_MISMATCH || type === CONFIG_MISMATCH;
}

/** D7: the step stopped because Quire's own PostgreSQL, object store or Temporal was away. */
export function isInfrastructureFault(error: unknown): boolean {
  return failureType(error) === INFRASTRUCTURE_FAULT;
}

/**
 * D7: a step that timed out (its heartbeat or its run time): its activity id, which the
 * workflow asks the database about, and the worker's clock at the last heartbeat the server
 * recorded (activities/attemptContext.ts puts `at` in every heartbeat); undefined for any
 * other failure.
 */
export function timedOutStep(
  error: unknown,
): { activityId: string; lastHeartbeatAt: number | null } | undefined {
  if (!(error instanceof ActivityFailure) || !(error.cause instanceof TimeoutFailure))
    return undefined;
  if (error.activityId === undefined) return undefined;
  const details = error.cause.lastHeartbeatDetails as { at?: unknown } | null | undefined;
  const at = typeof details?.at === 'number' ? details.at : null;
  return { activityId: error.activityId, lastHeartbeatAt: at };
}

/**
 * D7: a heartbeat timeout reported this long after the last heartbeat the server recorded is
 * no crash of the step's worker: the server itself was away (its timers could not fire on
 * time, and heartbeats could not reach it). A dead worker's timeout comes one heartbeat
 * timeout after its last beat, give or take a throttle interval and a busy workflow task.
 */
export function timedOutLate(
  lastHeartbeatAt: number | null,
  now: number,
  heartbeatTimeoutMs: number,
): boolean {
  if (lastHeartbeatAt === null) return false;
  return now - lastHeartbeatAt > 2 * heartbeatTimeoutMs + 10_000;
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
