import { createActivityBoundary } from './activityBoundary';
import { createAttemptBilling } from './attemptBilling';
import type { TranscriptionDeps } from './attemptContext';
import { createAttemptFences } from './attemptFence';
import { createAttemptSaving } from './attemptSaving';
import { createPageMedia } from './pageMedia';
import { PagesInHand } from './pagesInHand';

/**
 * The kit every transcription activity is made over (activities-dependency-injection): each
 * concept in its own part, the kit their one surface.
 */
export function createAttemptKit(deps: TranscriptionDeps) {
  const hand = deps.pagesInHand ?? new PagesInHand();
  const fences = createAttemptFences(deps);
  const saving = createAttemptSaving(deps);
  const boundary = createActivityBoundary(deps, {
    hand,
    attemptContext: fences.attemptContext,
    untilSaved: saving.untilSaved,
  });
  return {
    deps,
    pool: deps.pool,
    hand,
    fenceOf: fences.fenceOf,
    assertFleetKey: fences.assertFleetKey,
    ...createPageMedia(deps),
    ...createAttemptBilling(deps),
    ...saving,
    ...boundary,
  };
}

export type AttemptKit = ReturnType<typeof createAttemptKit>;
