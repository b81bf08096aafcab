import { log, sleep } from '@temporalio/workflow';
import { classifyStepFailure } from './failureClassification';
import { keyFaultPauseMs } from './keyFault';

/**
 * D5: kept until no workflow begun before `KEY_FAULT_PATCH` (workflows/patches.ts) runs.
 * Those runs retried every step that met a key fault in place, with a timer between tries;
 * their histories hold that loop's timers, so they replay only against it. Runs begun since
 * end the attempt's run on a key fault and say so in the story instead.
 */
export function retriedInPlace<A extends unknown[], R>(
  step: string,
  call: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args) => {
    for (let faults = 0; ; faults++) {
      try {
        return await call(...args);
      } catch (error) {
        if (classifyStepFailure(error).kind !== 'keyFault') throw error;
        log.error('attempt token does not open on this worker: fleet key mismatch', {
          activity: step,
        });
        await sleep(keyFaultPauseMs(faults));
      }
    }
  };
}
