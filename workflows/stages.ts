import { log } from '@temporalio/workflow';
import type {
  AttemptRef,
  PauseRequest,
  RecognizeOutcome,
  RevisionWriteOutcome,
  SegmentFailure,
  SliceOutcome,
} from '../activities/transcription';
import type { JobSteps } from './activityProfiles';
import { classifyStepFailure } from './failureClassification';
import type { JobProgressTracker } from './jobProgress';

/**
 * The stages of an attempt (T2) as the story calls them: read the image or the audio, then
 * polish. Each reports a provider pause back to the story rather than pausing itself.
 */

/** One run of a claimed attempt; a key fault runs it again with what it has learnt so far. */
export interface AttemptRun {
  ref: AttemptRef;
  chargedAttempts: number;
  /** Lines that failed with a charged class in this attempt: not tried again in it (J2). */
  failures: SegmentFailure[];
}

/** What a read came to; `committed` when its engine step committed it too (P6). */
export type Reading =
  | { outcome: RecognizeOutcome; polished: boolean; committed?: RevisionWriteOutcome }
  | { pause: PauseRequest };

// One recognize activity takes up to this many lines, for about `sliceMs`: few activities per
// page (each costs the Temporal server a round of history writes), yet fresh progress and a
// drain that ends well inside the shutdown grace period.
const RECOGNIZE_CHUNK = 500;

/** An image page: `segment` finds its lines (or reads the page in one pass, P1), `recognize` reads them. */
export async function readImage(
  steps: JobSteps,
  progress: JobProgressTracker,
  run: AttemptRun,
  options: { polish: boolean; sliceMs: number },
): Promise<Reading> {
  const { state } = progress;
  const { ref, failures } = run;
  progress.setStage('segment');
  // P7: `segment` reads the lines too, for one slice, and polishes when it can; P6: and
  // commits, when nothing is left to do. A worker from before either ignores what it does not
  // know, and its result says what it did.
  const segmented = await steps.segmentPage(ref, {
    polish: options.polish,
    maxMillis: options.sliceMs,
    skip: failures.map((f) => f.index),
    commit: true,
  });
  state.totalSegments = segmented.total;
  const read = segmented.read;
  // Read in one pass, the page is recognized already: the stage passes with no wait.
  progress.setStage('recognize', !read);
  if (read) {
    // P1: read in one pass; the lines that came back empty are this attempt's failures.
    failures.push(...read.failures);
    state.completedSegments = read.completed;
    state.failedSegments = failures.length;
    const outcome = { total: segmented.total, completed: read.completed, failures };
    return {
      outcome: { ...outcome, remaining: 0, pause: null },
      polished: read.polished,
      committed: read.committed,
    };
  }
  let chunk: SliceOutcome | undefined = segmented.partial;
  for (;;) {
    if (chunk) {
      failures.push(...chunk.failures);
      state.completedSegments = chunk.completed;
      state.failedSegments = failures.length;
      if (chunk.pause) return { pause: chunk.pause };
      if (chunk.remaining <= 0) {
        const { polished, committed, ...outcome } = chunk;
        // A slice recorded before P7 carries no `polished`: its polish is still to run.
        return {
          outcome: { ...outcome, failures },
          polished: polished === true,
          committed,
        };
      }
    }
    chunk = await steps.recognizeSegments(ref, {
      maxSegments: RECOGNIZE_CHUNK,
      maxMillis: options.sliceMs,
      skip: failures.map((f) => f.index),
      polish: options.polish,
      commit: true,
    });
  }
}

/** A recording: `submit` hands it to the engine, `recognize` awaits the engine's transcript. */
export async function readAudio(
  steps: JobSteps,
  progress: JobProgressTracker,
  run: AttemptRun,
): Promise<Reading> {
  progress.setStage('submit');
  await steps.submitAudio(run.ref);
  progress.setStage('recognize');
  const outcome = await steps.awaitAudio(run.ref);
  if (outcome.pause) return { pause: outcome.pause };
  progress.state.totalSegments = outcome.total;
  progress.state.completedSegments = outcome.completed;
  return { outcome, polished: false };
}

/**
 * `polish`: whether the polished text is committed. M3: a polish failure that pauses pauses the
 * polish provider, not the job's own; a charged one degrades to the raw text.
 */
export async function polish(
  steps: JobSteps,
  progress: JobProgressTracker,
  run: AttemptRun,
): Promise<{ polished: boolean } | { pause: PauseRequest }> {
  progress.setStage('polish');
  try {
    return { polished: (await steps.polishSegments(run.ref)).polished };
  } catch (error) {
    const failure = classifyStepFailure(error);
    if (failure.kind !== 'failed') throw error;
    if (failure.pause) return { pause: { ...failure.pause, stage: 'polish' } };
    log.warn('polish failed; committing raw text', {
      jobId: run.ref.jobId,
      errorClass: failure.failureClass,
    });
    return { polished: false };
  }
}
