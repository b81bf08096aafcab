import { type Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { QuireConfig } from '../core/config';
import { RECONCILER_WORKFLOW } from '../core/temporal';

/**
 * O3: periodic work runs as Temporal Schedules, registered idempotently at worker start so
 * operators see them in the Temporal UI. A schedule that exists is left as it is.
 */
export async function ensureSchedules(client: Client, config: QuireConfig): Promise<string[]> {
  const schedules: Array<{
    scheduleId: string;
    every: string;
    workflowType: string;
    args: unknown[];
  }> = [
    {
      scheduleId: 'quire-reconciler',
      every: '1m',
      workflowType: RECONCILER_WORKFLOW,
      args: [{ olderThanMs: config.QUIRE_RECONCILE_AFTER_MS }],
    },
    { scheduleId: 'quire-blob-cleanup', every: '5m', workflowType: 'blobCleanup', args: [] },
    { scheduleId: 'quire-orphan-sweep', every: '1h', workflowType: 'orphanSweep', args: [] },
    {
      scheduleId: 'quire-stranded-engine-jobs',
      every: '1h',
      workflowType: 'strandedEngineJobSweep',
      args: [],
    },
    { scheduleId: 'quire-event-retention', every: '24h', workflowType: 'eventRetention', args: [] },
  ];
  const created: string[] = [];
  for (const s of schedules) {
    try {
      await client.schedule.create({
        scheduleId: s.scheduleId,
        spec: { intervals: [{ every: s.every }] },
        policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1m' },
        action: {
          type: 'startWorkflow',
          workflowType: s.workflowType,
          taskQueue: config.QUIRE_TASK_QUEUE,
          args: s.args,
          workflowId: `${s.scheduleId}-run`,
        },
      });
      created.push(s.scheduleId);
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    }
  }
  return created;
}
