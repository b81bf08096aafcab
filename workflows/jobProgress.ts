import {
  condition,
  defineQuery,
  defineSignal,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { AttemptRef } from '../activities/transcription';
import type { FailureClass } from '../core/failures';
import {
  type JobProgress,
  type JobStatus,
  QUERIES,
  SEARCH_ATTRIBUTES,
  SIGNALS,
  type Stage,
  type TranscriptionJobResult,
} from '../core/temporal';
import {
  type PatchesOfThisRun,
  STAGE_MEMO_AT_START_PATCH,
  STAGE_MEMO_PATCH,
  STATUS_IN_DATABASE_PATCH,
} from './patches';

export const progressQuery = defineQuery<JobProgress>(QUERIES.progress);
export const providerResumedSignal = defineSignal<[{ provider: string }]>(SIGNALS.providerResumed);

/** A pause with no end of its own is looked at again this often (a missed Resume). */
const PAUSE_RECHECK_MS = 10 * 60_000;

/**
 * What a job's run shows of itself while it runs: the progress query, the stage in the memo,
 * and the operator's Resume signal it waits on; for a run begun before D14, the status search
 * attribute too.
 */
export function trackJobProgress(
  jobId: string,
  patches: Pick<PatchesOfThisRun, 'release' | 'has' | 'sinceRelease'>,
) {
  const { release, has } = patches;
  const state: JobProgress = {
    jobId,
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
  // D5: decided lazily at the first stage, right after the local claim, the memo's marker was
  // recorded in whichever workflow task the claim's result landed in; once in a few hundred
  // runs (a progress query arriving while the claim ran) a full replay, as a query on a
  // finished job needs, then met the marker before the code asked for it and failed with a
  // nondeterminism error. Runs begun since STAGE_MEMO_AT_START_PATCH decide it here, in the
  // first workflow task, before any local activity; earlier runs keep the lazy decision.
  const memoFromStart = has(STAGE_MEMO_AT_START_PATCH) && has(STAGE_MEMO_PATCH);
  // D14: decided here, in the first workflow task, for the same reason as the memo's patch.
  const statusInDatabase = patches.sinceRelease(STATUS_IN_DATABASE_PATCH);
  setHandler(progressQuery, () => state);
  setHandler(providerResumedSignal, () => {
    resumeSignals += 1;
  });

  const setStatus = (status: JobStatus) => {
    if (state.status === status) return;
    state.status = status;
    // The status is read from Quire's database (D14): each upsert was a billable action.
    if (!statusInDatabase)
      upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.status, value: status }]);
  };
  /**
   * `waits`: whether the run waits on the server in this stage (an activity, a timer). A stage
   * that passes within one workflow task (a read-once page's recognize, the local commit) is
   * never seen in the memo, whose upserts reach the server with the task's end: since the
   * release patch it is left out of the memo (P6), and the progress query still shows it.
   */
  const setStage = (stage: Stage, waits = true) => {
    state.stage = stage;
    if (release && !waits) return;
    // The stage is in the memo, so the Temporal UI shows it without a query (which needs a
    // running worker, exactly what a rolling deploy may lack for a while). Added behind a
    // patch (D5): runs begun by the previous workflow code replay without it and take it
    // up from where the new code runs them.
    if (memoFromStart || has(STAGE_MEMO_PATCH)) upsertMemo({ stage });
  };

  return {
    state,
    setStage,
    /** The attempt's lines as a pause or a close records them. */
    counts: () => ({
      completed: state.completedSegments,
      failed: state.failedSegments,
      total: state.totalSegments,
    }),
    /** How many Resume signals came so far: a wait ends at the next one. */
    resumeSignals: () => resumeSignals,

    /** A claimed attempt runs: the job is running. */
    attemptStarted(ref: AttemptRef) {
      attemptsRun += 1;
      state.attemptNumber = ref.attemptNumber;
      setStatus('running');
      state.failedSegments = 0;
    },

    /** Waits for an operator's Resume or the pause's own end, whichever comes first. */
    async waitForResume(seenSignals: number, resumeAtMs: number | null) {
      setStatus('pending');
      setStage('paused');
      const untilResume =
        resumeAtMs === null ? PAUSE_RECHECK_MS : Math.max(1_000, resumeAtMs - Date.now());
      await condition(() => resumeSignals > seenSignals, Math.min(untilResume, PAUSE_RECHECK_MS));
      state.pausedReason = null;
    },

    /** The job's end as the run reports it. */
    finish(
      status: JobStatus,
      revision: number | null,
      category: FailureClass | null,
    ): TranscriptionJobResult {
      setStatus(status);
      setStage('done');
      state.errorCategory = category;
      return { status, resultRevision: revision, attempts: attemptsRun, errorCategory: category };
    },
  };
}

export type JobProgressTracker = ReturnType<typeof trackJobProgress>;
