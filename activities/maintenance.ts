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
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
