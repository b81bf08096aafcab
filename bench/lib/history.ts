import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { median, round } from './stack';

/**
 * Where a job's workflow spent its time, from its history: each event with the milliseconds
 * since the one before it, in order. A task's wait in its queue is the gap before its
 * `...TaskStarted`; its run on the worker, the gap before its `...TaskCompleted`.
 */
export async function timeline(
  temporal: Client,
  workflowId: string,
): Promise<Array<[string, number]>> {
  const { events } = await temporal.workflow.getHandle(workflowId).fetchHistory();
  const phases: Array<[string, number]> = [];
  let last = tsToMs(events![0]!.eventTime);
  for (const event of events!) {
    const at = tsToMs(event.eventTime);
    const attributes = Object.keys(event).find(
      (k) => k.endsWith('EventAttributes') && event[k as keyof typeof event],
    );
    const name = (attributes ?? 'event').replace(/EventAttributes$/, '');
    phases.push([name, at - last]);
    last = at;
  }
  return phases;
}

/** A timeline summed by kind: queue waits and worker runs, workflow tasks apart from activities. */
export interface TaskTimes {
  /** The first workflow task's wait: the job's start until a worker took it. */
  firstWorkflowTaskWaitMs: number;
  /** Every later workflow task's wait in its queue (the worker's sticky queue, as a rule). */
  laterWorkflowTaskWaitMs: number;
  workflowTaskRunMs: number;
  activityWaitMs: number;
  activityRunMs: number;
  totalMs: number;
}

export function taskTimes(phases: Array<[string, number]>): TaskTimes {
  const times: TaskTimes = {
    firstWorkflowTaskWaitMs: 0,
    laterWorkflowTaskWaitMs: 0,
    workflowTaskRunMs: 0,
    activityWaitMs: 0,
    activityRunMs: 0,
    totalMs: 0,
  };
  let workflowTasks = 0;
  for (const [name, ms] of phases) {
    times.totalMs += ms;
    if (name === 'workflowTaskStarted') {
      if (workflowTasks++ === 0) times.firstWorkflowTaskWaitMs += ms;
      else times.laterWorkflowTaskWaitMs += ms;
    } else if (name === 'workflowTaskCompleted') times.workflowTaskRunMs += ms;
    else if (name === 'activityTaskStarted') times.activityWaitMs += ms;
    else if (name === 'activityTaskCompleted') times.activityRunMs += ms;
  }
  return times;
}

/** The median of each kind over many jobs. */
export function medianTaskTimes(all: TaskTimes[]): TaskTimes {
  const keys = Object.keys(all[0]!) as Array<keyof TaskTimes>;
  return Object.fromEntries(
    keys.map((k) => [k, round(median(all.map((t) => t[k])), 0)]),
  ) as unknown as TaskTimes;
}
