import type { InjectedSinks } from '@temporalio/worker';
import type { PagesInHand } from '../activities/pagesInHand';
import type { QuireSinks } from '../workflows/sinks';

/** The worker end of the workflow's sinks (`workflows/sinks.ts`); none is called in replay. */
export function quireSinks(hand?: PagesInHand): InjectedSinks<QuireSinks> {
  return {
    pagesInHand: { release: { fn: (_info, jobId) => hand?.release(jobId) } },
  };
}
