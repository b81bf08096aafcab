import { proxySinks, type Sinks } from '@temporalio/workflow';

/**
 * What a job's workflow tells the worker process it runs in, outside its history: nothing
 * here is recorded or replayed, and nothing comes back.
 *
 * M5: a run's end releases its page from the process's hand (`activities/pagesInHand.ts`).
 * The step that ended the attempt (a commit in the engine step, P6; a close or a pause) may
 * have run on another process of the fleet, since activity tasks go to any worker; the
 * workflow's last task runs where the page was claimed (its sticky worker), so the release
 * is said from there too.
 */
export interface QuireSinks extends Sinks {
  pagesInHand: { release(jobId: string): void };
}

export const sinks = proxySinks<QuireSinks>();
