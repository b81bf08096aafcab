import type { QuireClient } from '../client';

/** Periodic work run by Temporal Schedules (O3). */
export interface MaintenanceDeps {
  client: QuireClient;
}

export function createMaintenanceActivities(deps: MaintenanceDeps) {
  return {
    /** J6: starts jobs recorded but never started. Idempotent: "already started" is fine. */
    async reconcileUnstartedJobs(input: { olderThanMs: number }): Promise<{ started: number }> {
      return deps.client.reconcile(input.olderThanMs);
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
