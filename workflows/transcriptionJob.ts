import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  defineQuery,
  defineSignal,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type {
  AttemptRef,
  ClaimOutcome,
  PauseRequest,
  RecognizeOutcome,
  SegmentFailure,
  TranscriptionActivities,
} from '../activities/transcription';
import { cappedBackoffMs } from '../core/backoff';
import {
  type FailureClass,
  isFailureClass,
  isPausing,
  isPermanent,
  KEY_MISMATCH,
  STALE_ATTEMPT,
} from '../core/failures';
import {
  isActiveStatus,
  JOB_STATUSES,
  type JobProgress,
  type JobStatus,
  QUERIES,
  SEARCH_ATTRIBUTES,
  SIGNALS,
  type Stage,
  type TranscriptionJobInput,
  type TranscriptionJobResult,
} from '../core/temporal';

/**
 * One workflow per transcription job (T1). Temporal decides what runs next: which stage,
 * when to retry, how long to wait for a paused provider. Every fact is written by an
 * activity, fenced by the attempt's token, so this code never touches the database.
 */
/** D5: workflow changes since the first release, each behind its patch id. */
export const STAGE_MEMO_PATCH = 'quire-stage-memo';

export const progressQuery = defineQuery<JobProgress>(QUERIES.progress);
export const providerResumedSignal = defineSignal<[{ provider: string }]>(SIGNALS.providerResumed);

/**
 * D1: a step whose attempt token no key of its worker opens ran on a process configured with
 * another key. That is the fleet's fault, not the attempt's: nothing is charged and the
 * attempt stays running; the same step runs again, on whichever worker picks it up, until
 * one holding the key does. Which worker takes a task is the task queue's coin to toss, so
 * the first tries come quickly (1 s apart: eight wrong tosses in a row are rare); a fault that
 * outlasts them is a fleet with no worker holding the key, which waits longer between tries
 * (doubling to 1 min) so that its history does not grow fast while an operator fixes it.
 */
const KEY_FAULT_QUICK_TRIES = 8;
const KEY_FAULT_RETRY_MAX_MS = 60_000;

export function keyFaultPauseMs(faults: number): number {
  if (faults < KEY_FAULT_QUICK_TRIES) return 1_000;
  return Math.min(
    KEY_FAULT_RETRY_MAX_MS,
    1_000 * 2 ** Math.min(faults - KEY_FAULT_QUICK_TRIES + 1, 6),
  );
}

function keyFaultTolerant<T extends object>(activities: T): T {
  return new Proxy(activities, {
    get(target, name) {
      const call = Reflect.get(target, name) as (...args: unknown[]) => Promise<unknown>;
      return async (...args: unknown[]) => {
        for (let faults = 0; ; faults++) {
          try {
            return await call(...args);
          } catch (error) {
            if (failureType(error) !== KEY_MISMATCH) throw error;
            log.error('attempt token does not open on this worker: fleet key mismatch', {
              activity: String(name),
            });
            await sleep(keyFaultPauseMs(faults));
          }
        }
      };
    },
  });
}

// Database writes are short and idempotent: Temporal retries them through transient errors
// (a Postgres restart). A dead token is final, so `StaleAttempt` is never retried.
const db = keyFaultTolerant(
  proxyActivities<TranscriptionActivities>({
    startToCloseTimeout: '30s',
    scheduleToCloseTimeout: '10m',
    retry: {
      initialInterval: '500ms',
      backoffCoefficient: 2,
      maximumInterval: '30s',
      nonRetryableErrorTypes: [STALE_ATTEMPT, KEY_MISMATCH],
    },
  }),
);

// The same short database steps as local activities (P1, fewer round trips): run by the worker
// that runs the workflow task, recorded as one marker in its completion, with no task of
// their own to schedule, dispatch and report. Same retries; same fence in every write.
// D1: a token this worker's key cannot open (a fleet misconfigured with two keys) is no
// failure of the attempt: the step goes to the task queue instead, where a worker holding the
// sealing key can take it, as the other steps do.
const dbLocal = keyFaultFallback(
  proxyLocalActivities<TranscriptionActivities>({
    startToCloseTimeout: '30s',
    scheduleToCloseTimeout: '10m',
    localRetryThreshold: '10s',
    retry: {
      initialInterval: '500ms',
      backoffCoefficient: 2,
      maximumInterval: '30s',
      nonRetryableErrorTypes: [STALE_ATTEMPT, KEY_MISMATCH],
    },
  }),
  db,
);

function keyFaultFallback<T extends object>(local: T, queued: T): T {
  return new Proxy(local, {
    get(target, name) {
      const call = Reflect.get(target, name) as (...args: unknown[]) => Promise<unknown>;
      const fallback = Reflect.get(queued, name) as (...args: unknown[]) => Promise<unknown>;
      return async (...args: unknown[]) => {
        try {
          return await call(...args);
        } catch (error) {
          if (failureType(error) !== KEY_MISMATCH) throw error;
          return fallback(...args);
        }
      };
    },
  });
}

/**
 * D5: workflows started before read-once keep their step structure on replay; new ones claim
 * and commit in local activities and skip `recognize` (and `polish`) when the page was read,
 * and polished, in one pass.
 */
const READ_ONCE_PATCH = 'quire-read-once';

// Cleanup after cancellation runs outside the cancelled scope and must not give up early.
const cleanup = proxyActivities<TranscriptionActivities>({
  startToCloseTimeout: '1m',
  scheduleToCloseTimeout: '30m',
  retry: { initialInterval: '1s', maximumInterval: '1m' },
});

// One recognize activity takes up to this many lines, for about this long: few activities per
// page (each costs the Temporal server a round of history writes), yet fresh progress and a
// drain that ends well inside the shutdown grace period.
const RECOGNIZE_CHUNK = 500;
const RECOGNIZE_SLICE_MS = 10_000;
const PAUSE_RECHECK_MS = 10 * 60_000;

type AttemptEnd = { kind: 'final'; result: TranscriptionJobResult } | { kind: 'again' };

export async function transcriptionJob(
  input: TranscriptionJobInput,
): Promise<TranscriptionJobResult> {
  // Engine calls run for long and heartbeat: the heartbeat timeout replaces a lease (T3).
  // They are not retried by Temporal: a failed or abandoned run ends the attempt, and the
  // next attempt is claimed (closing this one `lease_expired`) and resumes from checkpoints.
  const engine = keyFaultTolerant(
    proxyActivities<TranscriptionActivities>({
      startToCloseTimeout: '2h',
      heartbeatTimeout: input.heartbeatTimeoutMs,
      retry: { maximumAttempts: 1 },
    }),
  );

  const state: JobProgress = {
    jobId: input.jobId,
    status: 'pending',
    stage: 'queued',
    attemptNumber: 0,
    completedSegments: 0,
    failedSegments: 0,
    totalSegments: null,
    pausedReason: null,
    errorCategory: null,
  };
  let resumeSignals = 0;
  let attemptsRun = 0;
  let current: AttemptRef | null = null;

  const readOnce = patched(READ_ONCE_PATCH);
  const steps = readOnce ? dbLocal : db;

  setHandler(progressQuery, () => state);
  setHandler(providerResumedSignal, () => {
    resumeSignals += 1;
  });

  const setStatus = (status: JobStatus) => {
    if (state.status === status) return;
    state.status = status;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.status, value: status }]);
  };
  const setStage = (stage: Stage) => {
    state.stage = stage;
    // The stage is in the memo, so the Temporal UI shows it without a query (which needs a
    // running worker, exactly what a rolling deploy may lack for a while). Added behind a
    // patch (D5): runs begun by the previous workflow code replay without it and take it
    // up from where the new code runs them.
    if (patched(STAGE_MEMO_PATCH)) upsertMemo({ stage });
  };
  const finish = (
    status: JobStatus,
    revision: number | null,
    category: FailureClass | null,
  ): TranscriptionJobResult => {
    setStatus(status);
    setStage('done');
    state.errorCategory = category;
    return { status, resultRevision: revision, attempts: attemptsRun, errorCategory: category };
  };
  const final = (
    status: JobStatus,
    revision: number | null,
    category: FailureClass | null,
  ): AttemptEnd => ({
    kind: 'final',
    result: finish(status, revision, category),
  });

  /** Waits for an operator's Resume or the pause's own end, whichever comes first. */
  const waitForResume = async (seenSignals: number, resumeAtMs: number | null) => {
    setStatus('pending');
    setStage('paused');
    const untilResume =
      resumeAtMs === null ? PAUSE_RECHECK_MS : Math.max(1_000, resumeAtMs - Date.now());
    await condition(() => resumeSignals > seenSignals, Math.min(untilResume, PAUSE_RECHECK_MS));
    state.pausedReason = null;
  };

  const pause = async (ref: AttemptRef, request: PauseRequest): Promise<AttemptEnd> => {
    const seen = resumeSignals;
    state.pausedReason = request.reason;
    const paused = await db.pauseProvider(ref, {
      ...request,
      counts: {
        completed: state.completedSegments,
        failed: state.failedSegments,
        total: state.totalSegments,
      },
    });
    await waitForResume(seen, paused.resumeAtMs);
    return { kind: 'again' };
  };

  /** J2/J3: an attempt in which no segment succeeded. */
  const noneSucceeded = async (
    ref: AttemptRef,
    category: FailureClass,
    detail: string,
    charged: number,
  ): Promise<AttemptEnd> => {
    const counts = { completed: 0, failed: state.failedSegments, total: state.totalSegments };
    if (isPermanent(category)) {
      await db.closeAttempt(ref, {
        outcome: 'failed',
        category,
        detail,
        counts,
        maxAttempts: input.maxAttempts,
      });
      return final('failed', null, category);
    }
    const closed = await db.closeAttempt(ref, {
      outcome: 'retryable_failed',
      category,
      detail,
      counts,
      maxAttempts: input.maxAttempts,
    });
    if (closed.jobStatus === 'failed') return final('failed', null, category);
    setStage('backoff');
    // J3: bounded and jittered, from the workflow's deterministic random.
    await sleep(cappedBackoffMs(charged - 1, input.retryInitialMs, input.retryMaxMs));
    return { kind: 'again' };
  };

  const runAttempt = async (
    claim: Extract<ClaimOutcome, { state: 'claimed' }>,
  ): Promise<AttemptEnd> => {
    const ref = claim.ref;
    state.failedSegments = 0;
    try {
      let outcome: RecognizeOutcome;
      // J3: from attempt polishAttempts + 1 on, the raw text is committed.
      let usePolish = claim.chargedAttempts <= input.polishAttempts;
      let polished = false;
      if (claim.kind === 'image') {
        setStage('segment');
        const segmented = readOnce
          ? await engine.segmentPage(ref, { polish: usePolish })
          : await engine.segmentPage(ref);
        state.totalSegments = segmented.total;
        setStage('recognize');
        const failures: SegmentFailure[] = [];
        const read = segmented.read;
        if (read) {
          // P1: read in one pass; the lines that came back empty are this attempt's failures.
          failures.push(...read.failures);
          polished = read.polished;
          state.completedSegments = read.completed;
          state.failedSegments = failures.length;
          outcome = {
            total: segmented.total,
            completed: read.completed,
            failures,
            remaining: 0,
            pause: null,
          };
        } else {
          for (;;) {
            const chunk = await engine.recognizeSegments(ref, {
              maxSegments: RECOGNIZE_CHUNK,
              maxMillis: input.recognizeSliceMs ?? RECOGNIZE_SLICE_MS,
              skip: failures.map((f) => f.index),
            });
            failures.push(...chunk.failures);
            state.completedSegments = chunk.completed;
            state.failedSegments = failures.length;
            if (chunk.pause) return await pause(ref, chunk.pause);
            if (chunk.remaining <= 0) {
              outcome = { ...chunk, failures };
              break;
            }
          }
        }
      } else {
        setStage('submit');
        await engine.submitAudio(ref);
        setStage('recognize');
        outcome = await engine.awaitAudio(ref);
        if (outcome.pause) return await pause(ref, outcome.pause);
        state.totalSegments = outcome.total;
        state.completedSegments = outcome.completed;
      }

      if (outcome.completed === 0 && outcome.total > 0) {
        const category = attemptCategory(outcome.failures);
        return await noneSucceeded(
          ref,
          category,
          `no segment succeeded (${category})`,
          claim.chargedAttempts,
        );
      }

      if (usePolish && !polished) {
        setStage('polish');
        try {
          usePolish = (await engine.polishSegments(ref)).polished;
        } catch (error) {
          const type = failureType(error);
          if (type === STALE_ATTEMPT || !isFailureClass(type)) throw error;
          // M3: a polish failure pauses the polish provider, not the job's own.
          if (isPausing(type))
            return await pause(ref, { ...pauseOf(type, error), stage: 'polish' });
          // Polish degrades: a charged polish failure commits the raw text instead.
          log.warn('polish failed; committing raw text', { jobId: input.jobId, errorClass: type });
          usePolish = false;
        }
      }

      setStage('commit');
      const committed = await steps.commitTranscript(ref, { usePolish });
      if (committed.state === 'conflict') return final('failed', null, 'conflict');
      return final('completed', committed.revision, null);
    } catch (error) {
      if (CancellationScope.current().consideredCancelled) throw error;
      const type = failureType(error);
      if (type === STALE_ATTEMPT) return { kind: 'again' };
      if (type !== undefined && isFailureClass(type)) {
        try {
          if (isPausing(type)) return await pause(ref, pauseOf(type, error));
          return await noneSucceeded(
            ref,
            type,
            `stage ${state.stage} failed (${type})`,
            claim.chargedAttempts,
          );
        } catch (closing) {
          // The token died while the failure was being recorded (the job was canceled or
          // superseded in the database meanwhile): like every stale path, the next claim
          // finds out what became of the job, and a canceled job gets its cleanup there.
          if (
            failureType(closing) === STALE_ATTEMPT &&
            !CancellationScope.current().consideredCancelled
          )
            return { kind: 'again' };
          throw closing;
        }
      }
      // The attempt was interrupted: its worker died (heartbeat timeout) or shut down. The
      // next claim closes it `lease_expired` and resumes from the checkpoints.
      log.warn('attempt interrupted', {
        jobId: input.jobId,
        attempt: ref.attemptNumber,
        stage: state.stage,
      });
      return { kind: 'again' };
    }
  };

  try {
    for (;;) {
      const seen = resumeSignals;
      const claim = await steps.claimAttempt({
        jobId: input.jobId,
        maxAttempts: input.maxAttempts,
      });
      if (claim.state === 'inactive') {
        const status = JOB_STATUSES.find((s) => s === claim.status && !isActiveStatus(s));
        // J5: a job canceled in the database whose workflow the cancel did not reach (its
        // Temporal cancel failed, or a stale token brought the news first) still gets the
        // cancel cleanup: the engine's copy of a recording is deleted.
        if (status === 'canceled' && patched('cleanup-when-found-canceled')) {
          await cleanup.cancelCleanup({ jobId: input.jobId, attemptNumber: null });
        }
        return finish(status ?? 'failed', null, null);
      }
      if (claim.state === 'exhausted') return finish('failed', null, claim.category);
      if (claim.state === 'paused') {
        state.pausedReason = claim.reason;
        await waitForResume(seen, claim.resumeAtMs);
        continue;
      }
      current = claim.ref;
      attemptsRun += 1;
      state.attemptNumber = claim.ref.attemptNumber;
      setStatus('running');
      const end = await runAttempt(claim);
      if (end.kind === 'final') return end.result;
      current = null;
    }
  } catch (error) {
    if (CancellationScope.current().consideredCancelled) {
      // J5: the database was told first (tokens are dead); still, a cancel that came straight
      // from the Temporal UI is recorded here, and the engine's copy of a recording is removed.
      const ref = current;
      const status = await CancellationScope.nonCancellable(() =>
        cleanup.cancelCleanup({ jobId: input.jobId, attemptNumber: ref?.attemptNumber ?? null }),
      );
      finish(status.jobStatus as JobStatus, null, null);
      // Report the run as cancelled in Temporal, whatever activity failure carried the news.
      throw error instanceof CancelledFailure
        ? error
        : new CancelledFailure('transcription job canceled');
    }
    throw error;
  }
}

function failureType(error: unknown): string | undefined {
  if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure)
    return error.cause.type ?? undefined;
  // A local activity that fails while its worker shuts down reaches the workflow unwrapped.
  if (error instanceof ApplicationFailure) return error.type ?? undefined;
  return undefined;
}

function pauseOf(type: string, error: unknown): PauseRequest {
  let details: { retryAfterMs?: number | null; scope?: 'provider' | 'workspace' } | undefined;
  if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure) {
    details = error.cause.details?.[0] as typeof details;
  }
  return {
    reason: type as PauseRequest['reason'],
    retryAfterMs: details?.retryAfterMs ?? null,
    scope: details?.scope,
  };
}

/** The category of an attempt where nothing succeeded: permanent only if every failure was. */
function attemptCategory(failures: SegmentFailure[]): FailureClass {
  const retryable = failures.find((f) => !isPermanent(f.category));
  return (retryable ?? failures[0])?.category ?? 'internal';
}
