import { attemptStepFinished } from '../db/attemptSteps';
import type { AttemptRef } from './attemptContext';
import type { AttemptKit } from './attemptKit';

/** D7: what the workflow asks of an attempt's step whose report an outage may have lost. */
export function createAttemptSteps(kit: AttemptKit) {
  const { pool } = kit;

  return {
    /**
     * D7: an engine step the workflow heard of only as a timeout: did it finish its work on its
     * worker (saved, recorded in attempt_steps) while the attempt still runs? Then what went
     * missing was its report, lost to an outage of Temporal or PostgreSQL, and the attempt
     * resumes uncharged from its checkpoints; otherwise the worker died mid-step (T3).
     */
    async stepFinished(
      ref: AttemptRef,
      step: { runId: string; activityId: string; waitMs?: number },
    ): Promise<{ finished: boolean }> {
      return kit.guarded('db', undefined, async () => {
        // Its worker may be saving it this very moment, just back from the same outage.
        const deadline = Date.now() + Math.min(step.waitMs ?? 0, 15_000);
        for (;;) {
          const finished = await attemptStepFinished(pool, {
            runId: step.runId,
            activityId: step.activityId,
            jobId: ref.jobId,
            attemptNumber: ref.attemptNumber,
          });
          if (finished || Date.now() >= deadline) return { finished };
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      });
    },
  };
}
