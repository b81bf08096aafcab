import type { RetryPolicy } from '@temporalio/common';
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { TranscriptionActivities } from '../activities/transcription';
import { KEY_MISMATCH, STALE_ATTEMPT } from '../core/failures';
import { localOrQueued } from './keyFault';
import { retriedInPlace } from './legacyKeyFault';

/**
 * How each step of `transcriptionJob` runs: its timeouts and its retry policy, one named
 * profile per kind of step (activities/attemptContext.ts maps errors to failures by the same
 * two profiles, `db` and `engine`).
 */

/**
 * Database writes are short and idempotent: Temporal retries them through transient errors
 * (a Postgres restart). A dead token is final, and so is a token this worker cannot open: the
 * story decides what comes next (D1).
 */
const DB_RETRY: RetryPolicy = {
  initialInterval: '500ms',
  backoffCoefficient: 2,
  maximumInterval: '30s',
  nonRetryableErrorTypes: [STALE_ATTEMPT, KEY_MISMATCH],
};

/** The short fenced database steps, as activities on the task queue. */
const db = proxyActivities<TranscriptionActivities>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '10m',
  retry: DB_RETRY,
});

/**
 * The same steps as local activities (P1, fewer round trips): run by the worker that runs the
 * workflow task, recorded as one marker in its completion, with no task of their own to
 * schedule, dispatch and report. Same retries; same fence in every write.
 */
const dbLocal = proxyLocalActivities<TranscriptionActivities>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '10m',
  localRetryThreshold: '10s',
  retry: DB_RETRY,
});

/**
 * Engine calls run for long and heartbeat: the heartbeat timeout replaces a lease (T3). They
 * are not retried by Temporal: a failed or abandoned run ends the attempt, and the next
 * attempt is claimed (closing this one `lease_expired`) and resumes from checkpoints.
 */
const ENGINE_RETRY: RetryPolicy = { maximumAttempts: 1 };

function engineProfile(heartbeatTimeoutMs: number) {
  return proxyActivities<TranscriptionActivities>({
    startToCloseTimeout: '2h',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: ENGINE_RETRY,
  });
}

/**
 * Cleanup after cancellation runs outside the cancelled scope and must not give up early:
 * retried without a limit on attempts, for up to half an hour.
 */
const CLEANUP_RETRY: RetryPolicy = { initialInterval: '1s', maximumInterval: '1m' };

const cleanup = proxyActivities<TranscriptionActivities>({
  startToCloseTimeout: '1m',
  scheduleToCloseTimeout: '30m',
  retry: CLEANUP_RETRY,
});

/** The steps the story calls, each in its profile. */
export type JobSteps = Pick<
  TranscriptionActivities,
  | 'claimAttempt'
  | 'segmentPage'
  | 'recognizeSegments'
  | 'submitAudio'
  | 'awaitAudio'
  | 'polishSegments'
  | 'commitTranscript'
  | 'pauseProvider'
  | 'closeAttempt'
  | 'cancelCleanup'
  | 'stepFinished'
>;

/**
 * The steps of one run, as the patches it began with decide (D5): since read-once, claim and
 * commit are local first; before the key-fault patch, every step retried a key fault in place.
 * `engineStepCalled` hears of each call of an engine step as it is made (D7: for a step that
 * timed out before the server recorded any heartbeat of it, the earliest its timeout could be
 * due; see workflows/outages.ts).
 */
export function jobSteps(
  heartbeatTimeoutMs: number,
  patches: { readOnce: boolean; keyFaultReruns: boolean },
  engineStepCalled: () => void,
): JobSteps {
  const engine = engineProfile(heartbeatTimeoutMs);
  const kept = patches.keyFaultReruns ? asIs : retriedInPlace;
  const noted = <A extends unknown[], R>(call: (...args: A) => Promise<R>) => {
    return (...args: A): Promise<R> => {
      engineStepCalled();
      return call(...args);
    };
  };
  const claimQueued = kept('claimAttempt', db.claimAttempt);
  const commitQueued = kept('commitTranscript', db.commitTranscript);
  const segment = kept('segmentPage', engine.segmentPage);
  return {
    claimAttempt: patches.readOnce ? localOrQueued(dbLocal.claimAttempt, claimQueued) : claimQueued,
    // Before read-once, `segmentPage` took no options.
    segmentPage: noted(patches.readOnce ? segment : (ref) => segment(ref)),
    recognizeSegments: noted(kept('recognizeSegments', engine.recognizeSegments)),
    submitAudio: noted(kept('submitAudio', engine.submitAudio)),
    awaitAudio: noted(kept('awaitAudio', engine.awaitAudio)),
    polishSegments: noted(kept('polishSegments', engine.polishSegments)),
    commitTranscript: patches.readOnce
      ? localOrQueued(dbLocal.commitTranscript, commitQueued)
      : commitQueued,
    pauseProvider: kept('pauseProvider', db.pauseProvider),
    closeAttempt: kept('closeAttempt', db.closeAttempt),
    cancelCleanup: cleanup.cancelCleanup,
    // D7: asked about an engine step that timed out (workflows/outages.ts).
    stepFinished: dbLocal.stepFinished,
  };
}

function asIs<A extends unknown[], R>(
  _step: string,
  call: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return call;
}
