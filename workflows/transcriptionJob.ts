import {
  CancellationScope,
  CancelledFailure,
  log,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  AttemptRef,
  ClaimOutcome,
  PauseRequest,
  RevisionWriteOutcome,
} from '../activities/transcription';
import { cappedBackoffMs } from '../core/backoff';
import {
  type FailureClass,
  isFailureClass,
  isPausing,
  isPermanent,
  STALE_ATTEMPT,
} from '../core/failures';
import {
  isActiveStatus,
  JOB_DEFAULTS,
  JOB_STATUSES,
  type JobStatus,
  type TranscriptionJobInput,
  type TranscriptionJobResult,
} from '../core/temporal';
import { jobSteps } from './activityProfiles';
import {
  attemptCategory,
  failureType,
  isInfrastructureFault,
  isKeyFault,
  pauseOf,
  timedOutLate,
  timedOutStep,
} from './failureClassification';
import { infraFaultPauseMs } from './infraFault';
import { trackJobProgress } from './jobProgress';
import { keyFaultPauseMs } from './keyFault';
import {
  CLEANUP_WHEN_FOUND_CANCELED_PATCH,
  INFRA_FAULT_PATCH,
  KEY_FAULT_PATCH,
  patchesOfThisRun,
  READ_ONCE_PATCH,
} from './patches';
import { sinks } from './sinks';
import { type AttemptRun, polish, readAudio, readImage } from './stages';

export { progressQuery, providerResumedSignal } from './jobProgress';
export { keyFaultPauseMs } from './keyFault';
export { STAGE_MEMO_PATCH } from './patches';

/**
 * How one run of an attempt ended: the job's end, the next claim, a fleet key fault, or an
 * outage of Quire's own infrastructure (D7).
 */
type AttemptEnd =
  | { kind: 'final'; result: TranscriptionJobResult }
  | { kind: 'again' }
  | { kind: 'keyFault' }
  | { kind: 'infra' };
const AGAIN: AttemptEnd = { kind: 'again' };
const KEY_FAULT: AttemptEnd = { kind: 'keyFault' };
const INFRA: AttemptEnd = { kind: 'infra' };
/** D7: how long after an outage a cut-off step is still taken for its aftermath, and how often. */
const RECOVERY_MS = 120_000;
const RECOVERY_RERUNS = 6;
/** D7: how long the database is asked whether a step that timed out a little late finished. */
const STEP_FINISH_WAIT_MS = 10_000;
const ENGINE_STEPS = [
  'segmentPage',
  'recognizeSegments',
  'submitAudio',
  'awaitAudio',
  'polishSegments',
] as const;

/**
 * One workflow per transcription job (T1). Temporal decides what runs next: which stage,
 * when to retry, how long to wait for a paused provider. Every fact is written by an
 * activity, fenced by the attempt's token, so this code never touches the database.
 *
 * The story: claim an attempt; read the image (segment, recognize) or the audio (submit,
 * await); polish; commit. Around it: a provider pause waits for its end or an operator's
 * Resume (Q3), a charged failure backs off before the next attempt (J3), a fleet key fault
 * runs the same attempt again (D1), and a cancel cleans up (J5).
 */
export async function transcriptionJob(
  input: TranscriptionJobInput,
): Promise<TranscriptionJobResult> {
  const patches = patchesOfThisRun();
  const { has } = patches;
  const progress = trackJobProgress(input.jobId, patches);
  const { state } = progress;
  const steps = jobSteps(input.heartbeatTimeoutMs, {
    readOnce: has(READ_ONCE_PATCH),
    keyFaultReruns: has(KEY_FAULT_PATCH),
  });
  // D7, decided in the first workflow task like every patch (docs/design.md).
  const infraReruns = has(INFRA_FAULT_PATCH);
  // D7: when the story last called an engine step (workflow time): for a step that timed out
  // before the server recorded any heartbeat of it, the earliest its timeout could be due.
  let engineStepAt = 0;
  for (const name of ENGINE_STEPS) {
    const call = steps[name] as (...args: unknown[]) => Promise<unknown>;
    (steps as Record<string, unknown>)[name] = (...args: unknown[]) => {
      engineStepAt = Date.now();
      return call(...args);
    };
  }
  const sliceMs = input.recognizeSliceMs ?? JOB_DEFAULTS.recognizeSliceMs;
  let current: AttemptRef | null = null;
  let keyFaults = 0;
  let infraFaults = 0;
  let heldAttempt: number | null = null;
  let lastInfraAt = 0;

  try {
    for (;;) {
      const seen = progress.resumeSignals();
      const claimed = await claim();
      if (claimed.state === 'keyFault') {
        await afterKeyFault();
        continue;
      }
      if (claimed.state === 'infra') {
        await afterInfraFault();
        continue;
      }
      if (claimed.state === 'inactive') {
        const status = JOB_STATUSES.find((s) => s === claimed.status && !isActiveStatus(s));
        // J5: a job canceled in the database whose workflow the cancel did not reach (its
        // Temporal cancel failed, or a stale token brought the news first) still gets the
        // cancel cleanup: the engine's copy of a recording is deleted.
        if (status === 'canceled' && has(CLEANUP_WHEN_FOUND_CANCELED_PATCH))
          await steps.cancelCleanup({ jobId: input.jobId, attemptNumber: null });
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
      while (end.kind === 'keyFault' || end.kind === 'infra') {
        if (end.kind === 'keyFault') await afterKeyFault();
        else await afterInfraFault();
        end = await runAttempt(run, claimed.kind);
      }
      keyFaults = 0;
      infraFaults = 0;
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
    releasePage();
  }

  /**
   * M5: the attempt ended (a close, a pause, the run's end): its page leaves this worker's
   * hand, wherever the step that ended it ran.
   */
  function releasePage() {
    sinks.pagesInHand.release(input.jobId);
  }

  /** One run of a claimed attempt: read, polish, commit; or why it stopped. */
  async function runAttempt(run: AttemptRun, kind: 'image' | 'audio'): Promise<AttemptEnd> {
    try {
      // J3: from attempt polishAttempts + 1 on, the raw text is committed.
      let usePolish = run.chargedAttempts <= input.polishAttempts;
      const read =
        kind === 'image'
          ? await readImage(steps, progress, run, { polish: usePolish, sliceMs })
          : await readAudio(steps, progress, run);
      if ('pause' in read) return await pause(run.ref, read.pause);
      const { outcome } = read;
      if (outcome.completed === 0 && outcome.total > 0) {
        const category = attemptCategory(outcome.failures);
        return await noneSucceeded(run, category, `no segment succeeded (${category})`);
      }
      // P6: committed by the engine step that read the page.
      if (read.committed) return committedEnd(read.committed);
      if (usePolish && !read.polished) {
        const polished = await polish(steps, progress, run);
        if ('pause' in polished) return await pause(run.ref, polished.pause);
        usePolish = polished.polished;
      }
      // A local activity: it ends within the workflow task that reports the job's end.
      progress.setStage('commit', false);
      return committedEnd(await steps.commitTranscript(run.ref, { usePolish }));
    } catch (error) {
      if (CancellationScope.current().consideredCancelled) throw error;
      if (isKeyFault(error)) return KEY_FAULT;
      if (infraReruns && isInfrastructureFault(error)) return INFRA;
      const type = failureType(error);
      if (type === STALE_ATTEMPT) return AGAIN;
      if (isFailureClass(type)) return await failed(run, type, error);
      // D7: a step that finished and saved its work on its worker, whose report an outage lost
      // (the server timed it out meanwhile), is no crash: the attempt resumes, uncharged.
      if (infraReruns && (await finishedThoughTimedOut(run.ref, error))) return INFRA;
      // The attempt was interrupted: its worker died (heartbeat timeout) or shut down. The
      // next claim closes it `lease_expired` and resumes from the checkpoints.
      log.warn('attempt interrupted', {
        jobId: input.jobId,
        attempt: run.ref.attemptNumber,
        stage: state.stage,
      });
      return AGAIN;
    }
  }

  /** Q3: the attempt is refunded and its provider paused; the next claim follows the pause. */
  async function pause(ref: AttemptRef, request: PauseRequest): Promise<AttemptEnd> {
    const seen = progress.resumeSignals();
    state.pausedReason = request.reason;
    const counts = {
      completed: state.completedSegments,
      failed: state.failedSegments,
      total: state.totalSegments,
    };
    const paused = await steps.pauseProvider(ref, { ...request, counts });
    releasePage();
    await progress.waitForResume(seen, paused.resumeAtMs);
    return AGAIN;
  }

  /** J2/J3: an attempt in which no segment succeeded fails the job, or backs off. */
  async function noneSucceeded(
    run: AttemptRun,
    category: FailureClass,
    detail: string,
  ): Promise<AttemptEnd> {
    const counts = { completed: 0, failed: state.failedSegments, total: state.totalSegments };
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
  }

  /** A classified failure of the attempt: its provider pauses, or the attempt is charged. */
  async function failed(run: AttemptRun, type: FailureClass, error: unknown) {
    try {
      if (isPausing(type)) return await pause(run.ref, pauseOf(type, error));
      return await noneSucceeded(run, type, `stage ${state.stage} failed (${type})`);
    } catch (closing) {
      if (CancellationScope.current().consideredCancelled) throw closing;
      if (isKeyFault(closing)) return KEY_FAULT;
      if (infraReruns && isInfrastructureFault(closing)) return INFRA;
      // The token died while the failure was being recorded (the job was canceled or
      // superseded in the database meanwhile): like every stale path, the next claim
      // finds out what became of the job, and a canceled job gets its cleanup there.
      if (failureType(closing) === STALE_ATTEMPT) return AGAIN;
      throw closing;
    }
  }

  /** D1: a claim made by a worker without the installation's key is made again; D7 too. */
  async function claim(): Promise<ClaimOutcome | { state: 'keyFault' } | { state: 'infra' }> {
    try {
      return await steps.claimAttempt({
        jobId: input.jobId,
        maxAttempts: input.maxAttempts,
        // D7: a running attempt after the one this run held is one whose claim it never heard of.
        ...(infraReruns ? { knownAttempt: heldAttempt } : {}),
      });
    } catch (error) {
      if (isKeyFault(error)) return { state: 'keyFault' };
      if (infraReruns && isInfrastructureFault(error)) return { state: 'infra' };
      throw error;
    }
  }

  /**
   * D7: whether a step that timed out was cut off by an outage rather than by its worker's
   * death: its timeout came long after its last heartbeat (the Temporal server was away), or
   * it had in fact finished and saved its work (see attempt_steps) and only its report was
   * lost.
   */
  async function finishedThoughTimedOut(ref: AttemptRef, error: unknown): Promise<boolean> {
    const step = timedOutStep(error);
    if (step === undefined) return false;
    // A step cut off while this attempt is still coming back from an outage it met (its
    // dependencies recovering, heartbeats not yet getting through) is the outage's too; a few
    // such in a row, and it is charged like any crash.
    if (infraFaults > 0 && infraFaults < RECOVERY_RERUNS && Date.now() - lastInfraAt < RECOVERY_MS)
      return true;
    const lastSeen = step.lastHeartbeatAt ?? engineStepAt;
    if (timedOutLate(lastSeen, Date.now(), input.heartbeatTimeoutMs)) return true;
    // A timeout a little late (the server was slow to time it out, or briefly away) may be
    // of a step whose worker is saving its work right now: the answer waits a few seconds for
    // it. A dead worker's timeout is on time, and its attempt moves on at once.
    const suspicious =
      step.lastHeartbeatAt !== null &&
      Date.now() - step.lastHeartbeatAt > input.heartbeatTimeoutMs + 2_000;
    const { finished } = await steps.stepFinished(ref, {
      runId: workflowInfo().runId,
      activityId: step.activityId,
      ...(suspicious ? { waitMs: STEP_FINISH_WAIT_MS } : {}),
    });
    return finished;
  }

  /** D7: nothing is charged for an outage of our own; the pause grows while it lasts. */
  async function afterInfraFault() {
    lastInfraAt = Date.now();
    log.warn('Quire infrastructure unavailable: the attempt runs again, uncharged', {
      jobId: input.jobId,
    });
    await sleep(infraFaultPauseMs(infraFaults++));
  }

  /** D1: nothing is charged for a key fault; the pause grows while the faults go on. */
  async function afterKeyFault() {
    log.error(
      'a step ran on a worker configured unlike the fleet (key or blob store): it runs again elsewhere',
      {
        jobId: input.jobId,
      },
    );
    await sleep(keyFaultPauseMs(keyFaults++));
  }

  function committedEnd(committed: RevisionWriteOutcome): AttemptEnd {
    if (committed.state === 'conflict') return final('failed', null, 'conflict');
    return final('completed', committed.revision, null);
  }

  function final(status: JobStatus, revision: number | null, category: FailureClass | null) {
    return { kind: 'final', result: progress.finish(status, revision, category) } as const;
  }
}
