import { patched, proxyActivities } from '@temporalio/workflow';
import type { MaintenanceActivities } from '../activities/maintenance';

/**
 * Maintenance workflows, each run by a Temporal Schedule (O3) on the maintenance task queue,
 * so a cleanup never waits behind page recognition. They only call one activity: the
 * schedule gives operators the history, pause and trigger buttons in the Temporal UI.
 * The function names are the workflow types that schedules and histories record.
 */
const maintenance = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: '10m',
  retry: { maximumAttempts: 3 },
});

/**
 * J6: jobs whose row was written but whose workflow never started are started. D4: active jobs
 * whose workflow no longer runs (terminated, failed, timed out, lost) are continued from their
 * checkpoints in a new run, or failed with a stated category.
 */
export async function reconcileJobs(input: {
  olderThanMs: number;
}): Promise<{ started: number; lost?: Record<string, number> }> {
  const { started } = await maintenance.reconcileUnstartedJobs(input);
  if (!patched('reconcile-lost-workflows')) return { started };
  const lost = await maintenance.reconcileLostWorkflows(input);
  return { started, lost };
}

/** U2/U3: due blob cleanups are deleted, fenced against new references. */
export async function blobCleanup(): Promise<Record<string, number>> {
  return maintenance.runBlobCleanup();
}

/** U2: objects and temporaries nothing references are handed to cleanup. */
export async function orphanSweep(): Promise<Record<string, number>> {
  return maintenance.sweepOrphans();
}

/** I4: image pages without a pyramidal derivative get one. */
export async function imageDerivatives(): Promise<Record<string, number>> {
  return maintenance.buildImageDerivatives();
}

/** O3: engine-side copies older than 6 h that no live job references are deleted. */
export async function strandedEngineJobSweep(): Promise<Record<string, unknown>> {
  return maintenance.sweepStrandedEngineJobs();
}

/** O3: events and finished deliveries past retention are removed. */
export async function eventRetention(): Promise<Record<string, number>> {
  return maintenance.purgeOldEvents();
}
