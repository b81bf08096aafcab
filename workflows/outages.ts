import type { AttemptRef } from '../activities/transcription';
import { backoffCeilingMs } from '../core/backoff';
import type { JobSteps } from './activityProfiles';
import type { TimedOutStep } from './failureClassification';

/**
 * D7: the timing rules by which the story tells a step cut off by an outage of Quire's own
 * infrastructure from one whose worker died. A dead worker's heartbeat timeout comes one
 * heartbeat timeout after its last beat; an outage's comes late (the server was away), or
 * hits a step that had in fact finished and saved its work, or hits an attempt still coming
 * back from an outage it met. The decisions are pure, beside their unit tests
 * (test/unit/outages.test.ts); only `finishedThoughTimedOut` asks the database.
 */

/** How long after an outage a cut-off step is still taken for its aftermath, and how often. */
export const RECOVERY_MS = 120_000;
export const RECOVERY_RERUNS = 6;
/** How long the database is asked whether a step that timed out a little late finished. */
export const STEP_FINISH_WAIT_MS = 10_000;
/**
 * A timeout later than the heartbeat timeout by more than this (the server was slow to time it
 * out, or briefly away) may be of a step whose worker is saving its work right now.
 */
export const SAVING_SLACK_MS = 2_000;

/** The outages the attempt in hand met, as the story counts them: how many, the last when. */
export interface OutagesMet {
  count: number;
  lastAt: number;
}

/**
 * The pause before running an attempt again after an outage: 1 s, doubling to 30 s, so that a
 * failover of a minute or two costs a few history events and the job resumes within seconds
 * of the dependency's return.
 */
export function infraFaultPauseMs(faults: number): number {
  return backoffCeilingMs(faults, 1_000, 30_000);
}

/**
 * A heartbeat timeout reported this long after the last heartbeat the server recorded is no
 * crash of the step's worker: the server itself was away (its timers could not fire on time,
 * and heartbeats could not reach it). A dead worker's timeout comes one heartbeat timeout
 * after its last beat, give or take a throttle interval and a busy workflow task.
 */
export function timedOutLate(
  lastHeartbeatAt: number | null,
  now: number,
  heartbeatTimeoutMs: number,
): boolean {
  if (lastHeartbeatAt === null) return false;
  return now - lastHeartbeatAt > 2 * heartbeatTimeoutMs + 10_000;
}

/**
 * A step cut off while its attempt is still coming back from an outage it met (its
 * dependencies recovering, heartbeats not yet getting through) is the outage's too; a few such
 * in a row, and it is charged like any crash.
 */
export function stillRecovering(met: OutagesMet, now: number): boolean {
  return met.count > 0 && met.count < RECOVERY_RERUNS && now - met.lastAt < RECOVERY_MS;
}

/**
 * What the timing alone says of a step that timed out: the outage's (`outage`), or a question
 * for the database whether it finished, with how long to wait for a worker that may be saving
 * it (`waitMs`). `calledAt`: when the story called the step, the earliest its timeout could be
 * due when the server recorded no heartbeat of it.
 */
export function timeoutVerdict(
  step: TimedOutStep,
  at: { calledAt: number; now: number; heartbeatTimeoutMs: number; met: OutagesMet },
): 'outage' | { waitMs: number | null } {
  const { now, heartbeatTimeoutMs } = at;
  if (stillRecovering(at.met, now)) return 'outage';
  if (timedOutLate(step.lastHeartbeatAt ?? at.calledAt, now, heartbeatTimeoutMs)) return 'outage';
  // A dead worker's timeout is on time, and its attempt moves on at once.
  const late =
    step.lastHeartbeatAt !== null &&
    now - step.lastHeartbeatAt > heartbeatTimeoutMs + SAVING_SLACK_MS;
  return { waitMs: late ? STEP_FINISH_WAIT_MS : null };
}

/**
 * Whether a step that timed out was cut off by an outage rather than by its worker's death:
 * the timing says so, or the step had in fact finished and saved its work (see attempt_steps)
 * and only its report was lost.
 */
export async function finishedThoughTimedOut(
  stepFinished: JobSteps['stepFinished'],
  ref: AttemptRef,
  runId: string,
  step: TimedOutStep,
  at: { calledAt: number; now: number; heartbeatTimeoutMs: number; met: OutagesMet },
): Promise<boolean> {
  const verdict = timeoutVerdict(step, at);
  if (verdict === 'outage') return true;
  const { finished } = await stepFinished(ref, {
    runId,
    activityId: step.activityId,
    ...(verdict.waitMs !== null ? { waitMs: verdict.waitMs } : {}),
  });
  return finished;
}
