import type { QuireClient } from '../client';

/**
 * Periodic work run by Temporal Schedules (O3). The work itself is injected, so the worker
 * composes it from its own parts (blob store, providers) and tests can drive it directly.
 */
export interface MaintenanceDeps {
  client: QuireClient;
  /** U2/U3: deletes due cleanups (fenced), retrying failed ones with capped backoff. */
  runBlobCleanup: () => Promise<Record<string, number>>;
  /** U2: finds stored objects and stale temporaries that nothing references. */
  sweepOrphans: () => Promise<Record<string, number>>;
  /** O3: engine jobs older than 6 h that no live job references are deleted. */
  sweepStrandedEngineJobs: () => Promise<Record<string, unknown>>;
  /** O3: old events and finished deliveries are removed. */
  purgeOldEvents: () => Promise<Record<string, number>>;
}

export function createMaintenanceActivities(deps: MaintenanceDeps) {
  return {
    /** J6: starts jobs recorded but never started. Idempotent: "already started" is fine. */
    async reconcileUnstartedJobs(input: { olderThanMs: number }): Promise<{ started: number }> {
      return deps.client.reconcile(input.olderThanMs);
    },
    async runBlobCleanup(): Promise<Record<string, number>> {
      return deps.runBlobCleanup();
    },
    async sweepOrphans(): Promise<Record<string, number>> {
      return deps.sweepOrphans();
    },
    async sweepStrandedEngineJobs(): Promise<Record<string, unknown>> {
      return deps.sweepStrandedEngineJobs();
    },
    async purgeOldEvents(): Promise<Record<string, number>> {
      return deps.purgeOldEvents();
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
