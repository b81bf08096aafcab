import type { TranscriptionDeps } from './attemptContext';
import { createAttemptKit } from './attemptKit';
import { createAttemptSteps } from './attemptSteps';
import { createAttemptActivities } from './attempts';
import { createAudioStages } from './audioStages';
import { createImageStages } from './imageStages';
import { createProviderPause } from './providerPause';
import { createTranscriptStages } from './transcriptStages';

/**
 * The activities of the transcription workflow, made by a factory over injected
 * dependencies. Each business fact is written by one activity in one transaction, fenced by
 * the attempt token (A1). The workflow only ever holds the token sealed.
 *
 * Where each lives: the attempt's life (claim, close, cancel) in ./attempts.ts, a provider's
 * pause in ./providerPause.ts, the step an outage hid in ./attemptSteps.ts; the stages of image
 * pages in ./imageStages.ts (its ways of reading in ./pageRead.ts and ./lineRecognition.ts), of
 * recordings in ./audioStages.ts, polish and commit in ./transcriptStages.ts; what they share
 * (fence, budget, ledger, heartbeat, the error boundary) in the kit, ./attemptKit.ts, its parts
 * each in its own module and its types in ./attemptContext.ts. The property names are the
 * activity types Temporal records in histories: renaming one breaks replay of running workflows.
 */
export function createTranscriptionActivities(deps: TranscriptionDeps) {
  const kit = createAttemptKit(deps);
  return {
    ...createAttemptActivities(kit),
    ...createProviderPause(kit),
    ...createAttemptSteps(kit),
    ...createImageStages(kit),
    ...createAudioStages(kit),
    ...createTranscriptStages(kit),
  };
}

export type TranscriptionActivities = ReturnType<typeof createTranscriptionActivities>;

export type { RevisionWriteOutcome } from '../db/revisions';
export type {
  AttemptRef,
  PauseRequest,
  RecognizeOutcome,
  SegmentFailure,
  TranscriptionDeps,
} from './attemptContext';
export type { ClaimOutcome } from './attempts';
export type { SliceOutcome } from './imageReading';
