import { CancellationScope, CancelledFailure, log } from '@temporalio/workflow';
import type { AttemptRef, ClaimOutcome } from '../activities/transcription';
import {
  isActiveStatus,
  JOB_DEFAULTS,
  JOB_STATUSES,
  type JobStatus,
  type TranscriptionJobInput,
  type TranscriptionJobResult,
} from '../core/temporal';
import { jobSteps } from './activityProfiles';
import { AGAIN, type AttemptEnd, attemptEnds } from './attemptEnds';
import {
  attemptCategory,
  classifyStepFailure,
  type FailedStep,
  isRerun,
  type Rerun,
  type StepFailure,
} from './failureClassification';
import { trackJobProgress } from './jobProgress';
import {
  CLEANUP_WHEN_FOUND_CANCELED_PATCH,
  INFRA_FAULT_PATCH,
  KEY_FAULT_PATCH,
  patchesOfThisRun,
  READ_ONCE_PATCH,
} from './patches';
import { trackReruns } from './reruns';
import { type AttemptRun, polish, readAudio, readImage } from './stages';

export { progressQuery, providerResumedSignal } from './jobProgress';
export { STAGE_MEMO_PATCH } from './patches';

/**
 * One workflow per transcription job (T1). Temporal decides what runs next: which stage,
 * when to retry, how long to wait for a paused provider. Every fact is written by an
 * activity, fenced by the attempt's token, so this code never touches the database.
 *
 * The story: claim an attempt; read the page, the image (segment, then recognize what is
 * left) or the audio (submit, await). On the common path the step that reads the page's last
 * line polishes it and commits the transcript too (P6); a read that could not (audio, or a
 * polish left to run) is polished and committed here. Around it: a provider pause waits for
 * its end or an operator's Resume (Q3), a charged failure backs off before the next attempt
 * (J3), a fleet key fault or an outage of our own runs the same attempt again, uncharged (D1,
 * D7), and a cancel cleans up (J5). How a failed step reads: workflows/failureClassification.ts.
 */
export async function transcriptionJob(
  input: TranscriptionJobInput,
): Promise<TranscriptionJobResult> {
  const patches = patchesOfThisRun();
  const progress = trackJobProgress(input.jobId, patches);
  const { state } = progress;
  const reruns = trackReruns(input.jobId, input.heartbeatTimeoutMs);
  const steps = jobSteps(
    input.heartbeatTimeoutMs,
    { readOnce: patches.has(READ_ONCE_PATCH), keyFaultReruns: patches.has(KEY_FAULT_PATCH) },
    reruns.engineStepCalled,
  );
  patches.retired(INFRA_FAULT_PATCH);
  const ends = attemptEnds(steps, progress, input);
  const sliceMs = input.recognizeSliceMs ?? JOB_DEFAULTS.recognizeSliceMs;
  let current: AttemptRef | null = null;
  let heldAttempt: number | null = null;

  try {
    for (;;) {
      const seen = progress.resumeSignals();
      const claimed = await claim();
      if (isRerun(claimed)) {
        await reruns.pauseBefore(claimed);
        continue;
      }
      if (claimed.state === 'inactive') {
        const status = JOB_STATUSES.find((s) => s === claimed.status && !isActiveStatus(s));
        // J5: a job canceled in the database whose workflow the cancel did not reach (its
        // Temporal cancel failed, or a stale token brought the news first) still gets the
        // cancel cleanup: the engine's copy of a recording is deleted.
        if (status === 'canceled') {
          patches.retired(CLEANUP_WHEN_FOUND_CANCELED_PATCH);
          await steps.cancelCleanup({ jobId: input.jobId, attemptNumber: null });
        }
        // A commit whose report was lost (its worker died, or an outage hid it) is found here.
        const revision = status === 'completed' ? (claimed.revision ?? null) : null;
        return progress.finish(status ?? 'failed', revision, null);
      }
      if (claimed.state === 'exhausted') return progress.finish('failed', null, claimed.category);
      if (claimed.state === 'paused') {
        state.pausedReason = claimed.reason;
        await progress.waitForResume(seen, claimed.resumeAtMs);
        continue;
      }
      current = claimed.ref;
      heldAttempt = claimed.ref.attemptNumber;
      progress.attemptStarted(claimed.ref);
      const run: AttemptRun = { ...claimed, failures: [] };
      let end = await runAttempt(run, claimed.kind);
      // D1, D7: the same attempt runs again (same token, nothing charged), from its checkpoints.
      while (isRerun(end)) {
        await reruns.pauseBefore(end);
        end = await runAttempt(run, claimed.kind);
      }
      reruns.attemptEnded();
      if (end.kind === 'final') return end.result;
      current = null;
    }
  } catch (error) {
    if (!CancellationScope.current().consideredCancelled) throw error;
    // J5: the database was told first (tokens are dead); still, a cancel that came straight
    // from the Temporal UI is recorded here, and the engine's copy of a recording is removed.
    const attemptNumber = current?.attemptNumber ?? null;
    const stopped = await CancellationScope.nonCancellable(() =>
      steps.cancelCleanup({ jobId: input.jobId, attemptNumber }),
    );
    progress.finish(stopped.jobStatus as JobStatus, null, null);
    // Report the run as cancelled in Temporal, whatever activity failure carried the news.
    throw error instanceof CancelledFailure
      ? error
      : new CancelledFailure('transcription job canceled');
  } finally {
    ends.releasePage();
  }

  /** D1: a claim made by a worker without the installation's key is made again; D7 too. */
  async function claim(): Promise<ClaimOutcome | Rerun> {
    try {
      return await steps.claimAttempt({
        jobId: input.jobId,
        maxAttempts: input.maxAttempts,
        // D7: a running attempt after the one this run held is one whose claim it never heard of.
        knownAttempt: heldAttempt,
      });
    } catch (error) {
      const failure = classifyStepFailure(error);
      if (isRerun(failure)) return failure;
      throw error;
    }
  }

  /**
   * One run of a claimed attempt: read, which commits on the common path (P6); else polish and
   * commit; or why it stopped.
   */
  async function runAttempt(run: AttemptRun, kind: 'image' | 'audio'): Promise<AttemptEnd> {
    try {
      // J3: from attempt polishAttempts + 1 on, the raw text is committed.
      let usePolish = run.chargedAttempts <= input.polishAttempts;
      const read =
        kind === 'image'
          ? await readImage(steps, progress, run, { polish: usePolish, sliceMs })
          : await readAudio(steps, progress, run);
      if ('pause' in read) return await ends.pause(run.ref, read.pause);
      const { outcome } = read;
      if (outcome.completed === 0 && outcome.total > 0) {
        const category = attemptCategory(outcome.failures);
        return await ends.noneSucceeded(run, category, `no segment succeeded (${category})`);
      }
      // P6, the common path: the engine step that read the page committed it.
      if (read.committed) return ends.committed(read.committed);
      // Otherwise the polish still to run, then the commit, as steps of their own.
      if (usePolish && !read.polished) {
        const polished = await polish(steps, progress, run);
        if ('pause' in polished) return await ends.pause(run.ref, polished.pause);
        usePolish = polished.polished;
      }
      // A local activity: it ends within the workflow task that reports the job's end.
      progress.setStage('commit', false);
      return ends.committed(await steps.commitTranscript(run.ref, { usePolish }));
    } catch (error) {
      if (CancellationScope.current().consideredCancelled) throw error;
      return await stepFailed(run, classifyStepFailure(error));
    }
  }

  /** What comes after a step of the attempt failed. */
  async function stepFailed(run: AttemptRun, failure: StepFailure): Promise<AttemptEnd> {
    if (isRerun(failure)) return failure;
    if (failure.kind === 'stale') return AGAIN;
    if (failure.kind === 'failed') return await failed(run, failure);
    // D7: a step that finished and saved its work on its worker, whose report an outage lost
    // (the server timed it out meanwhile), is no crash: the attempt resumes, uncharged.
    const { timedOut } = failure;
    if (timedOut && (await reruns.cutOffByOutage(steps.stepFinished, run.ref, timedOut)))
      return { kind: 'infrastructure' };
    // The attempt was interrupted: its worker died (heartbeat timeout) or shut down. The
    // next claim closes it `lease_expired` and resumes from the checkpoints.
    log.warn('attempt interrupted', {
      jobId: input.jobId,
      attempt: run.ref.attemptNumber,
      stage: state.stage,
    });
    return AGAIN;
  }

  /** A classified failure of the attempt: its provider pauses, or the attempt is charged. */
  async function failed(run: AttemptRun, failure: FailedStep): Promise<AttemptEnd> {
    try {
      if (failure.pause) return await ends.pause(run.ref, failure.pause);
      const category = failure.failureClass;
      return await ends.noneSucceeded(run, category, `stage ${state.stage} failed (${category})`);
    } catch (closing) {
      if (CancellationScope.current().consideredCancelled) throw closing;
      const fault = classifyStepFailure(closing);
      if (isRerun(fault)) return fault;
      // The token died while the failure was being recorded (the job was canceled or
      // superseded in the database meanwhile): like every stale path, the next claim
      // finds out what became of the job, and a canceled job gets its cleanup there.
      if (fault.kind === 'stale') return AGAIN;
      throw closing;
    }
  }
}
