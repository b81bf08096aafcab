import { Context } from '@temporalio/activity';
import {
  INFRASTRUCTURE_FAULT,
  InfrastructureFaultError,
  isInfrastructureError,
} from '../core/failures';
import type { TranscriptionDeps } from './attemptContext';

/**
 * T3 + D7: how a step's work outlives trouble: the heartbeat that is the attempt's lease, and
 * the wait that keeps finished engine work until Quire's own database takes it.
 */
export function createAttemptSaving(deps: TranscriptionDeps) {
  /**
   * D7: runs `save` (the write of engine work already done: a read page, a recognized line)
   * until Quire's own PostgreSQL or object store takes it. While they do not answer, the step
   * heartbeats and waits (250 ms doubling to 1 s between tries: a refused connection costs
   * nothing, and the save should land the moment the database is back), for at most
   * `infraWaitMs`; then it gives up with an `InfrastructureFault`, which charges nothing. A
   * cancel does not stop the wait: a Temporal server back from the same outage may have timed
   * the step out meanwhile, and the work is still worth saving; the fence refuses the save if
   * the attempt ended. Any other error passes at once.
   */
  async function untilSaved<T>(what: string, save: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + (deps.infraWaitMs ?? 180_000);
    const context = Context.current();
    const beat = () => context.heartbeat({ waiting: 'infrastructure', step: what, at: Date.now() });
    for (let tries = 0; ; tries++) {
      // D7: a save blocked on a service that stopped answering keeps the attempt's lease
      // until the call's own bound (QUIRE_DB_QUERY_TIMEOUT_MS...) fails it as an outage.
      const timer = setInterval(
        () => context.heartbeat({ saving: what, at: Date.now() }),
        deps.heartbeatEveryMs,
      );
      try {
        return await save();
      } catch (error) {
        if (!isInfrastructureError(error)) throw error;
        if (Date.now() >= deadline) {
          throw new InfrastructureFaultError(
            'postgres',
            `${what}: Quire's own database or object store did not answer in time`,
          );
        }
        if (tries === 0) {
          deps.logger.warn(
            { errorClass: INFRASTRUCTURE_FAULT, step: what },
            'infrastructure unavailable: the finished work waits to be saved',
          );
        }
      } finally {
        clearInterval(timer);
      }
      beat();
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 250 * 2 ** tries)));
    }
  }

  /** Heartbeats on a timer while `work` runs: the heartbeat is the attempt's lease (T3). */
  async function withHeartbeat<T>(
    details: () => Record<string, unknown>,
    work: () => Promise<T>,
  ): Promise<T> {
    const context = Context.current();
    // D7: `at`, this worker's clock, tells the workflow a dead worker's timeout from one the
    // Temporal server reported late because it had been away itself.
    const beat = () => context.heartbeat({ ...details(), at: Date.now() });
    beat();
    const timer = setInterval(beat, deps.heartbeatEveryMs);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  return { untilSaved, withHeartbeat };
}
