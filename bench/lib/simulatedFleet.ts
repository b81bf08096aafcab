import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPage, prepareItem } from '../../db/ingest';
import type { Pool } from '../../db/pool';
import { withTransaction } from '../../db/pool';
import type { BenchStack } from './stack';

/**
 * What the queueing benchmarks (bench/fairness, bench/priority) share: workspaces and image
 * pages made straight in the database, and a worker process on the simulated engine with a
 * task queue of its own, ready once its health file appears.
 */

export async function benchWorkspace(pool: Pool, name: string): Promise<number> {
  const { rows } = await pool.query('INSERT INTO workspaces (name) VALUES ($1) RETURNING id', [
    name,
  ]);
  return rows[0].id;
}

export async function benchPages(
  stack: BenchStack,
  workspaceId: number,
  count: number,
): Promise<number[]> {
  return withTransaction(stack.pool, async (tx) => {
    let position = await prepareItem(tx, workspaceId, 'bench');
    const ids: number[] = [];
    for (let i = 0; i < count; i++) {
      const page = await createPage(
        tx,
        { workspaceId, itemId: 'bench', position: position++, kind: 'image' },
        'http://bench',
      );
      ids.push(page.pageId);
    }
    return ids;
  });
}

export async function spawnSimulatedWorker(
  stack: BenchStack,
  options: { taskQueue: string; slots: number; secret: string },
): Promise<ChildProcess> {
  const { taskQueue, slots, secret } = options;
  const health = join(tmpdir(), `quire-bench-worker-${process.pid}-${taskQueue}.json`);
  rmSync(health, { force: true });
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    env: {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      DATABASE_POOL_SIZE: String(slots + 5),
      TEMPORAL_ADDRESS: stack.temporalAddress,
      QUIRE_TASK_QUEUE: taskQueue,
      QUIRE_MAINTENANCE_TASK_QUEUE: `${taskQueue}-maintenance`,
      QUIRE_SECRET_KEY: secret,
      QUIRE_ENABLE_SIMULATED: '1',
      WORKER_CONCURRENCY: String(slots),
      QUIRE_HEALTH_FILE: health,
      QUIRE_WORKFLOW_BUNDLE: stack.workflowBundle,
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  const deadline = Date.now() + 120_000;
  while (!existsSync(health)) {
    if (Date.now() > deadline) throw new Error('the worker did not become healthy');
    await new Promise((r) => setTimeout(r, 200));
  }
  return child;
}
