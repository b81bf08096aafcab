import { backoffCeilingMs } from '../core/backoff';
import { classifyStepFailure } from './failureClassification';

/**
 * D1: a step whose attempt token no key of its worker opens ran on a process configured with
 * another key. That is the fleet's fault, not the attempt's: nothing is charged and the
 * attempt stays running. The worker that lacks the key stops polling at once
 * (activities/attemptContext.ts), so the step run again goes to a worker that holds it.
 */

/**
 * Which worker takes a task is the task queue's coin to toss, so the first tries come quickly
 * (1 s apart: eight wrong tosses in a row are rare); a fault that outlasts them is a fleet
 * with no worker holding the key, which waits longer between tries (doubling to 1 min) so that
 * its history does not grow fast while an operator fixes it.
 */
const KEY_FAULT_QUICK_TRIES = 8;
const KEY_FAULT_FIRST_PAUSE_MS = 1_000;
const KEY_FAULT_MAX_PAUSE_MS = 60_000;

/** The pause before the try after `faults` key faults in a row (0 for the first fault). */
export function keyFaultPauseMs(faults: number): number {
  return backoffCeilingMs(
    faults - KEY_FAULT_QUICK_TRIES + 1,
    KEY_FAULT_FIRST_PAUSE_MS,
    KEY_FAULT_MAX_PAUSE_MS,
  );
}

/**
 * A local step (run by the worker that runs the workflow task) that meets a key fault goes to
 * the task queue instead, where a worker holding the key can take it, as the other steps do.
 */
export function localOrQueued<A extends unknown[], R>(
  local: (...args: A) => Promise<R>,
  queued: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await local(...args);
    } catch (error) {
      if (classifyStepFailure(error).kind !== 'keyFault') throw error;
      return queued(...args);
    }
  };
}
