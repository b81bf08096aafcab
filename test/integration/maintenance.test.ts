import { randomBytes } from 'node:crypto';
import { Client, ScheduleOverlapPolicy } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QuireConfig } from '../../core/config';
import { MONTHS_AHEAD, TIME_PARTITIONED_TABLES } from '../../db/partitions';
import { createMaintenanceWorker } from '../../worker/createWorker';
import { ensureSchedules, maintenanceSchedules } from '../../worker/schedules';
import { createTestQuire, eventually, type TestQuire } from '../support/quire';

/**
 * O3 schedules: maintenance workflows are registered by function on their own
 * task queue, and registration brings existing schedules up to date. Schedule ids are fixed
 * per namespace, and worker processes of other test files register them too, so this file
 * works in a namespace of its own.
 */
let quire: TestQuire;
let temporal: Client;
let config: QuireConfig;

const SCHEDULE_IDS = [
  'quire-reconciler',
  'quire-blob-cleanup',
  'quire-orphan-sweep',
  'quire-stranded-engine-jobs',
  'quire-event-retention',
  'quire-image-derivatives',
];

beforeAll(async () => {
  quire = await createTestQuire();
  const namespace = `quire-maintenance-${randomBytes(4).toString('hex')}`;
  await quire.temporal.connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  config = { ...quire.config, TEMPORAL_NAMESPACE: namespace };
  temporal = new Client({ connection: quire.temporal.connection, namespace });
  // A new namespace answers once the frontend's namespace cache has seen it.
  await eventually(async () => {
    await temporal.schedule.list()[Symbol.asyncIterator]().next();
    return true;
  }, 60_000);
});

afterAll(async () => {
  for (const id of SCHEDULE_IDS) {
    await temporal?.schedule
      .getHandle(id)
      .delete()
      .catch(() => {});
  }
  await quire?.close();
});

describe('maintenance schedules (O3)', () => {
  it('O3 registering again updates a schedule whose settings changed and leaves the others', async () => {
    expect(await ensureSchedules(temporal, config)).toEqual({ created: SCHEDULE_IDS, updated: [] });
    expect(await ensureSchedules(temporal, config)).toEqual({ created: [], updated: [] });

    // A setting that feeds a schedule's arguments.
    const later = { ...config, QUIRE_RECONCILE_AFTER_MS: config.QUIRE_RECONCILE_AFTER_MS + 60_000 };
    expect(await ensureSchedules(temporal, later)).toEqual({
      created: [],
      updated: ['quire-reconciler'],
    });
    const reconciler = await temporal.schedule.getHandle('quire-reconciler').describe();
    expect(reconciler.action.args).toEqual([{ olderThanMs: later.QUIRE_RECONCILE_AFTER_MS }]);
    expect(reconciler.policies.overlap).toBe('SKIP');

    // An interval left by an older release.
    const cleanup = temporal.schedule.getHandle('quire-blob-cleanup');
    await cleanup.update((previous) => ({ ...previous, spec: { intervals: [{ every: '7m' }] } }));
    expect(await ensureSchedules(temporal, later)).toEqual({
      created: [],
      updated: ['quire-blob-cleanup'],
    });
    expect((await cleanup.describe()).spec.intervals?.map((i) => i.every)).toEqual([5 * 60_000]);

    // A moved queue moves every schedule.
    const moved = { ...later, QUIRE_MAINTENANCE_TASK_QUEUE: `${config.QUIRE_TASK_QUEUE}-moved` };
    expect(await ensureSchedules(temporal, moved)).toEqual({ created: [], updated: SCHEDULE_IDS });
    for (const id of SCHEDULE_IDS) {
      const described = await temporal.schedule.getHandle(id).describe();
      expect(described.action.taskQueue).toBe(moved.QUIRE_MAINTENANCE_TASK_QUEUE);
    }
  });

  it('O3 every schedule runs its workflow on the maintenance queue with no transcription worker', async () => {
    await ensureSchedules(temporal, config);
    const workflowTypes = maintenanceSchedules(config).map((s) => s.workflow.name);
    expect(workflowTypes).toEqual([
      'reconcileJobs',
      'blobCleanup',
      'orphanSweep',
      'strandedEngineJobSweep',
      'eventRetention',
      'imageDerivatives',
    ]);
    const before = new Map<string, number>();
    for (const [i, id] of SCHEDULE_IDS.entries()) {
      const described = await temporal.schedule.getHandle(id).describe();
      expect(described.action.workflowType).toBe(workflowTypes[i]);
      expect(described.action.taskQueue).toBe(config.QUIRE_MAINTENANCE_TASK_QUEUE);
      expect(described.action.taskQueue).not.toBe(config.QUIRE_TASK_QUEUE);
      before.set(id, described.info.recentActions.length);
    }

    // Only a maintenance worker polls: nothing serves the transcription queue.
    const worker = await createMaintenanceWorker({
      config,
      pool: quire.db.pool,
      providers: quire.providers,
      connection: quire.connection,
      client: quire.client,
      blobStore: quire.blobStore,
      workflowBundle: { codePath: process.env.QUIRE_TEST_WORKFLOW_BUNDLE! },
    });
    const results = await worker.runUntil(async () => {
      const out: Record<string, unknown> = {};
      for (const id of SCHEDULE_IDS) {
        const handle = temporal.schedule.getHandle(id);
        // The reconciler's interval is a minute: a run it started on its own, still waiting
        // for a worker, would make a trigger under the schedule's SKIP policy a no-op.
        await handle.trigger(ScheduleOverlapPolicy.ALLOW_ALL);
        const run = await eventually(async () => {
          const actions = (await handle.describe()).info.recentActions;
          return actions.length > (before.get(id) ?? 0) ? actions.at(-1) : undefined;
        });
        out[id] = await temporal.workflow.getHandle(run.action.workflow.workflowId).result();
      }
      return out;
    });
    expect(results).toEqual({
      'quire-reconciler': {
        started: 0,
        lost: { checked: 0, continued: 0, canceled: 0, failed: 0 },
      },
      'quire-blob-cleanup': { deleted: 0, referenced: 0, retrying: 0 },
      'quire-orphan-sweep': {
        removedTemporaries: 0,
        scheduledBlobs: 0,
        removedObjects: 0,
        listed: expect.any(Number),
        wrapped: 1,
      },
      'quire-stranded-engine-jobs': { deleted: 0, unrecordedDeleted: 0, skipped: 0, errors: [] },
      // D11: the migration made this month and the next; the pass adds the rest ahead.
      'quire-event-retention': {
        addedPartitions: (MONTHS_AHEAD - 1) * TIME_PARTITIONED_TABLES.length,
        droppedMonths: 0,
        heldMonths: 0,
        busyMonths: 0,
        providerCallMonthsDropped: 0,
        providerCallMonthsBusy: 0,
        endedCheckpoints: 0,
      },
      'quire-image-derivatives': { made: 0, failed: 0, yielded: 0, megapixels: 0, buildMs: 0 },
    });
  });
});
