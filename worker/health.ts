import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { NativeConnection } from '@temporalio/worker';
import { type Pool, pingDatabase } from '../db/pool';

/**
 * O1 worker health: a local heartbeat file written only after this worker was seen polling
 * its task queue (Temporal lists it among the queue's pollers) and the database answered.
 * `quire-worker health` (or `npm run worker -- health`) reads it.
 */
export interface HealthRecord {
  at: string;
  identity: string;
  pid: number;
  taskQueue: string;
}

export async function checkAndRecordHealth(args: {
  pool: Pool;
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  identity: string;
  file: string;
  /** D1: whether the installation's current key is one this process holds. */
  keyHeld?: () => Promise<boolean>;
}): Promise<boolean> {
  try {
    await pingDatabase(args.pool);
    if (args.keyHeld && !(await args.keyHeld())) return false;
    const described = await args.connection.workflowService.describeTaskQueue({
      namespace: args.namespace,
      taskQueue: { name: args.taskQueue, kind: 1 },
      taskQueueType: 2, // activity pollers: this worker polls both kinds
    });
    const seen = (described.pollers ?? []).some((p) => p.identity === args.identity);
    if (!seen) return false;
    const record: HealthRecord = {
      at: new Date().toISOString(),
      identity: args.identity,
      pid: process.pid,
      taskQueue: args.taskQueue,
    };
    await mkdir(dirname(args.file), { recursive: true });
    const temporary = `${args.file}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(record));
    await rename(temporary, args.file);
    return true;
  } catch {
    return false;
  }
}

/** Exit status of the `health` command: 0 when the heartbeat is fresh. */
export async function readHealth(
  file: string,
  maxAgeMs: number,
): Promise<{ healthy: boolean; reason: string }> {
  try {
    const record = JSON.parse(await readFile(file, 'utf8')) as HealthRecord;
    const age = Date.now() - Date.parse(record.at);
    if (age > maxAgeMs)
      return { healthy: false, reason: `last heartbeat ${Math.round(age / 1000)} s ago` };
    return {
      healthy: true,
      reason: `heartbeat ${Math.round(age / 1000)} s ago from ${record.identity}`,
    };
  } catch {
    return { healthy: false, reason: `no heartbeat file at ${file}` };
  }
}
