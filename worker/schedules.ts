import { isDeepStrictEqual } from 'node:util';
import {
  type Client,
  ScheduleAlreadyRunning,
  type ScheduleDescription,
  type ScheduleOptionsStartWorkflowAction,
  ScheduleOverlapPolicy,
} from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import type { QuireConfig } from '../core/config';
import {
  blobCleanup,
  eventRetention,
  imageDerivatives,
  orphanSweep,
  reconcileJobs,
  strandedEngineJobSweep,
} from '../workflows/maintenance';

/**
 * O3: periodic work runs as Temporal Schedules on the maintenance task queue, registered at
 * worker start so operators see them in the Temporal UI. A schedule that exists is brought
 * up to date when its interval, workflow, queue or arguments changed; one that already
 * matches is left alone (its pause state and history stay as the operator left them).
 */
export interface MaintenanceSchedule {
  scheduleId: string;
  everyMs: number;
  workflow: Workflow;
  args: unknown[];
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export function maintenanceSchedules(config: QuireConfig): MaintenanceSchedule[] {
  return [
    {
      scheduleId: 'quire-reconciler',
      everyMs: MINUTE,
      workflow: reconcileJobs,
      args: [{ olderThanMs: config.QUIRE_RECONCILE_AFTER_MS }],
    },
    { scheduleId: 'quire-blob-cleanup', everyMs: 5 * MINUTE, workflow: blobCleanup, args: [] },
    { scheduleId: 'quire-orphan-sweep', everyMs: HOUR, workflow: orphanSweep, args: [] },
    {
      scheduleId: 'quire-stranded-engine-jobs',
      everyMs: HOUR,
      workflow: strandedEngineJobSweep,
      args: [],
    },
    { scheduleId: 'quire-event-retention', everyMs: 24 * HOUR, workflow: eventRetention, args: [] },
    // I4: soon after ingest; until a page's derivative exists the Image API reads its master.
    {
      scheduleId: 'quire-image-derivatives',
      everyMs: MINUTE / 2,
      workflow: imageDerivatives,
      args: [],
    },
  ];
}

export interface ScheduleRegistration {
  created: string[];
  updated: string[];
}

export async function ensureSchedules(
  client: Client,
  config: QuireConfig,
): Promise<ScheduleRegistration> {
  const registration: ScheduleRegistration = { created: [], updated: [] };
  for (const s of maintenanceSchedules(config)) {
    const spec = { intervals: [{ every: s.everyMs }] };
    const action: ScheduleOptionsStartWorkflowAction<Workflow> = {
      type: 'startWorkflow',
      workflowType: s.workflow,
      taskQueue: config.QUIRE_MAINTENANCE_TASK_QUEUE,
      args: s.args,
      workflowId: `${s.scheduleId}-run`,
    };
    try {
      await client.schedule.create({
        scheduleId: s.scheduleId,
        spec,
        policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1m' },
        action,
      });
      registration.created.push(s.scheduleId);
      continue;
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    }
    const handle = client.schedule.getHandle(s.scheduleId);
    if (isCurrent(await handle.describe(), s, config)) continue;
    await handle.update((previous) => ({ ...previous, spec, action }));
    registration.updated.push(s.scheduleId);
  }
  return registration;
}

function isCurrent(
  described: ScheduleDescription,
  wanted: MaintenanceSchedule,
  config: QuireConfig,
): boolean {
  const intervals = described.spec.intervals ?? [];
  const { action } = described;
  return (
    intervals.length === 1 &&
    intervals[0]?.every === wanted.everyMs &&
    (described.spec.calendars ?? []).length === 0 &&
    action.workflowType === wanted.workflow.name &&
    action.taskQueue === config.QUIRE_MAINTENANCE_TASK_QUEUE &&
    isDeepStrictEqual(action.args ?? [], wanted.args)
  );
}
