import { proxyActivities } from '@temporalio/workflow';
import type { MaintenanceActivities } from '../activities/maintenance';

/**
 * J6 reconciler, run by a Temporal Schedule: jobs whose row was written but whose workflow
 * never started (a crash between the two) are found and started.
 */
const { reconcileUnstartedJobs } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: '2m',
  retry: { maximumAttempts: 3 },
});

export async function reconcileJobs(input: { olderThanMs: number }): Promise<{ started: number }> {
  return reconcileUnstartedJobs(input);
}
