import { log, sleep, workflowInfo } from '@temporalio/workflow';
import type { AttemptRef } from '../activities/transcription';
import type { JobSteps } from './activityProfiles';
import type { Rerun, TimedOutStep } from './failureClassification';
import { keyFaultPauseMs } from './keyFault';
import { finishedThoughTimedOut, infraFaultPauseMs, type OutagesMet } from './outages';

/**
 * D1, D7: what a job's run keeps of the faults that run the same attempt again, uncharged (a
 * fleet key fault, an outage of Quire's own infrastructure): how many in a row, so that the
 * pause before the next try grows while they go on, and when the outage and the last engine
 * step were, for the timing rules of workflows/outages.ts.
 */
export function trackReruns(jobId: string, heartbeatTimeoutMs: number) {
  let keyFaults = 0;
  const outages: OutagesMet = { count: 0, lastAt: 0 };
  // When the story last called an engine step (workflow time).
  let engineStepAt = 0;

  return {
    /** Told by each engine step as the story calls it (workflows/activityProfiles.ts). */
    engineStepCalled() {
      engineStepAt = Date.now();
    },

    /** D7: whether a step that timed out was cut off by an outage, not by its worker's death. */
    cutOffByOutage(
      stepFinished: JobSteps['stepFinished'],
      ref: AttemptRef,
      step: TimedOutStep,
    ): Promise<boolean> {
      return finishedThoughTimedOut(stepFinished, ref, workflowInfo().runId, step, {
        calledAt: engineStepAt,
        now: Date.now(),
        heartbeatTimeoutMs,
        met: outages,
      });
    },

    /** The pause before the same attempt (or claim) runs again. */
    async pauseBefore(fault: Rerun) {
      if (fault.kind === 'infrastructure') {
        outages.lastAt = Date.now();
        log.warn('Quire infrastructure unavailable: the attempt runs again, uncharged', { jobId });
        await sleep(infraFaultPauseMs(outages.count++));
        return;
      }
      log.error(
        'a step ran on a worker configured unlike the fleet (key or blob store): it runs again elsewhere',
        { jobId },
      );
      await sleep(keyFaultPauseMs(keyFaults++));
    },

    /** The attempt ended: the next one counts its faults afresh. */
    attemptEnded() {
      keyFaults = 0;
      outages.count = 0;
    },
  };
}
