import { sleep } from '@temporalio/workflow';
import type { AttemptRef, PauseRequest, RevisionWriteOutcome } from '../activities/transcription';
import { cappedBackoffMs } from '../core/backoff';
import { type FailureClass, isPermanent } from '../core/failures';
import type { JobStatus, TranscriptionJobInput, TranscriptionJobResult } from '../core/temporal';
import type { JobSteps } from './activityProfiles';
import type { Rerun } from './failureClassification';
import type { JobProgressTracker } from './jobProgress';
import { sinks } from './sinks';
import type { AttemptRun } from './stages';

/**
 * How one run of an attempt ended: the job's end, the next claim, or a fault that runs the
 * same attempt again (a fleet key fault, D1; an outage of Quire's own infrastructure, D7).
 */
export type AttemptEnd =
  | { kind: 'final'; result: TranscriptionJobResult }
  | { kind: 'again' }
  | Rerun;
export const AGAIN: AttemptEnd = { kind: 'again' };

/** The ways the story ends an attempt's run: a commit, a provider pause, a failed attempt. */
export function attemptEnds(
  steps: JobSteps,
  progress: JobProgressTracker,
  input: TranscriptionJobInput,
) {
  const { state } = progress;

  /**
   * M5: the attempt ended (a close, a pause, the run's end): its page leaves this worker's
   * hand, wherever the step that ended it ran.
   */
  const releasePage = () => sinks.pagesInHand.release(input.jobId);

  const final = (status: JobStatus, revision: number | null, category: FailureClass | null) =>
    ({ kind: 'final', result: progress.finish(status, revision, category) }) as const;

  return {
    releasePage,

    /** The transcript committed, or the page moved on meanwhile: the job's end either way. */
    committed(committed: RevisionWriteOutcome): AttemptEnd {
      if (committed.state === 'conflict') return final('failed', null, 'conflict');
      return final('completed', committed.revision, null);
    },

    /** Q3: the attempt is refunded and its provider paused; the next claim follows the pause. */
    async pause(ref: AttemptRef, request: PauseRequest): Promise<AttemptEnd> {
      const seen = progress.resumeSignals();
      state.pausedReason = request.reason;
      const paused = await steps.pauseProvider(ref, { ...request, counts: progress.counts() });
      releasePage();
      await progress.waitForResume(seen, paused.resumeAtMs);
      return AGAIN;
    },

    /** J2/J3: an attempt in which no segment succeeded fails the job, or backs off. */
    async noneSucceeded(
      run: AttemptRun,
      category: FailureClass,
      detail: string,
    ): Promise<AttemptEnd> {
      const counts = { ...progress.counts(), completed: 0 };
      const outcome = isPermanent(category) ? 'failed' : 'retryable_failed';
      const closed = await steps.closeAttempt(run.ref, {
        outcome,
        category,
        detail,
        counts,
        maxAttempts: input.maxAttempts,
      });
      releasePage();
      if (outcome === 'failed' || closed.jobStatus === 'failed')
        return final('failed', null, category);
      progress.setStage('backoff');
      // J3: bounded and jittered, from the workflow's deterministic random.
      await sleep(cappedBackoffMs(run.chargedAttempts - 1, input.retryInitialMs, input.retryMaxMs));
      return AGAIN;
    },
  };
}
