import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { QuireClient } from '../../client';
import { parseConfig } from '../../core/config';
import { createPage, prepareItem } from '../../db/ingest';
import { createJobStore } from '../../db/jobStore';
import { withTransaction } from '../../db/pool';
import { median, round, startBenchStack } from '../lib/stack';

/**
 * bench/recovery (T3): a worker process is SIGKILLed in the middle of a job; how long until
 * the job runs again on another worker (its next attempt is claimed) and until it commits.
 * The system Quire learns from needed 3.5 minutes; the target is under 30 s.
 * Env: BENCH_RUNS (default 5), BENCH_HEARTBEAT_MS (comma list, default 15000,5000).
 */
const runs = Number(process.env.BENCH_RUNS ?? 5);
const heartbeats = (process.env.BENCH_HEARTBEAT_MS ?? '15000,5000').split(',').map(Number);

const stack = await startBenchStack();
const secret = 'b'.repeat(64);
const workspace = (
  await stack.pool.query(`INSERT INTO workspaces (name) VALUES ('bench') RETURNING id`)
).rows[0].id;
const connection = await Connection.connect({ address: stack.temporalAddress });
const temporal = new Client({ connection });

function spawnWorker(
  taskQueue: string,
  heartbeatMs: number,
  tag: string,
): { child: ChildProcess; health: string } {
  const health = join(tmpdir(), `quire-bench-health-${tag}-${process.pid}.json`);
  rmSync(health, { force: true });
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    env: {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      QUIRE_TASK_QUEUE: taskQueue,
      QUIRE_SECRET_KEY: secret,
      QUIRE_ENABLE_SIMULATED: '1',
      QUIRE_HEARTBEAT_TIMEOUT_MS: String(heartbeatMs),
      QUIRE_HEALTH_FILE: health,
      QUIRE_WORKFLOW_BUNDLE: stack.workflowBundle,
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  return { child, health };
}

async function until<T>(
  check: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const results = [];
for (const heartbeatMs of heartbeats) {
  const runningAgain: number[] = [];
  const committed: number[] = [];
  for (let run = 0; run < runs; run++) {
    const taskQueue = `bench-recovery-${heartbeatMs}-${run}`;
    const config = parseConfig({
      QUIRE_TASK_QUEUE: taskQueue,
      QUIRE_HEARTBEAT_TIMEOUT_MS: String(heartbeatMs),
      QUIRE_DEFAULT_PROVIDER: 'simulated',
      QUIRE_ENABLE_SIMULATED: '1',
    });
    const client = QuireClient.fromConfig(config, temporal, createJobStore(stack.pool));
    const a = spawnWorker(taskQueue, heartbeatMs, `a${run}`);
    await until(async () => (existsSync(a.health) ? true : undefined), 60_000, 200);
    const { pageId } = await withTransaction(stack.pool, async (tx) => {
      const position = await prepareItem(tx, workspace, 'bench');
      return createPage(
        tx,
        { workspaceId: workspace, itemId: 'bench', position, kind: 'image' },
        'http://bench',
      );
    });
    const job = await client.startJob({
      workspaceId: workspace,
      pageId,
      options: { simulated: { lines: 40, latencyMs: 100 } },
    });
    await until(
      async () => {
        const { rows } = await stack.pool.query(
          'SELECT completed_segments FROM transcription_jobs WHERE id = $1',
          [job.jobId],
        );
        return rows[0].completed_segments >= 5 ? true : undefined;
      },
      60_000,
      50,
    );
    a.child.kill('SIGKILL');
    const killedAt = Date.now();
    const b = spawnWorker(taskQueue, heartbeatMs, `b${run}`);
    const again = await until(async () => {
      const { rows } = await stack.pool.query(
        `SELECT started_at FROM transcription_job_attempts WHERE job_id = $1 AND attempt_number = 2`,
        [job.jobId],
      );
      return rows[0]?.started_at as Date | undefined;
    }, 300_000);
    const done = await until(async () => {
      const { rows } = await stack.pool.query(
        `SELECT status, ended_at FROM transcription_jobs WHERE id = $1`,
        [job.jobId],
      );
      return rows[0].status === 'completed' ? (rows[0].ended_at as Date) : undefined;
    }, 300_000);
    runningAgain.push((again.getTime() - killedAt) / 1000);
    committed.push((done.getTime() - killedAt) / 1000);
    b.child.kill('SIGTERM');
    await new Promise((r) => b.child.once('exit', r));
  }
  results.push({
    heartbeatTimeoutSeconds: heartbeatMs / 1000,
    runs,
    runningAgainSeconds: {
      median: round(median(runningAgain), 2),
      all: runningAgain.map((v) => round(v, 2)),
    },
    committedSeconds: {
      median: round(median(committed), 2),
      all: committed.map((v) => round(v, 2)),
    },
    vsSeedSystem: { seedSeconds: 210, ratio: round(median(runningAgain) / 210, 3) },
    targetSeconds: 30,
  });
}
process.stdout.write(`${JSON.stringify({ bench: 'recovery', results }, null, 2)}\n`);
await connection.close();
await stack.close();
