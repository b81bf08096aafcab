import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workerArgs } from '../../scripts/lib/workerBuild';
import { REPO_ROOT } from './fixtures';
import type { TestQuire } from './quire';
import { temporalAddress } from './quire';

/**
 * A real worker process (`worker/main.ts`) for chaos tests: SIGKILL, SIGTERM, restarts. From
 * the sources through tsx, or with `compiled` as `npm start` and cluster mode run it.
 */
export interface WorkerProcess {
  child: ChildProcess;
  healthFile: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
}

export function spawnWorker(
  quire: TestQuire,
  name: string,
  env: Record<string, string> = {},
  options: { compiled?: boolean } = {},
): WorkerProcess {
  const healthFile = join(tmpdir(), `quire-health-${name}-${process.pid}-${Date.now()}.json`);
  rmSync(healthFile, { force: true });
  const args = options.compiled ? workerArgs(REPO_ROOT) : ['--import', 'tsx', 'worker/main.ts'];
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      DATABASE_URL: quire.config.DATABASE_URL,
      TEMPORAL_ADDRESS: temporalAddress(),
      QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
      QUIRE_MAINTENANCE_TASK_QUEUE: quire.config.QUIRE_MAINTENANCE_TASK_QUEUE,
      QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
      QUIRE_HEARTBEAT_TIMEOUT_MS: String(quire.config.QUIRE_HEARTBEAT_TIMEOUT_MS),
      QUIRE_HEALTH_FILE: healthFile,
      QUIRE_WORKFLOW_BUNDLE: process.env.QUIRE_TEST_WORKFLOW_BUNDLE ?? '',
      WORKER_CONCURRENCY: '4',
      QUIRE_ENABLE_SIMULATED: quire.config.QUIRE_ENABLE_SIMULATED ? '1' : '0',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, healthFile, exited, output: () => out };
}

/** Waits until the worker has written its health heartbeat (it polls and reaches Postgres). */
export async function waitHealthy(worker: WorkerProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (existsSync(worker.healthFile)) return;
    if (worker.child.exitCode !== null) throw new Error(`worker exited early:\n${worker.output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`worker not healthy within ${timeoutMs} ms:\n${worker.output()}`);
}

export function readCallLog(
  path: string,
): Array<{ op: string; jobId: string; attempt: number; segment: number }> {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [op, jobId, attempt, segment] = line.split(' ');
      return { op: op!, jobId: jobId!, attempt: Number(attempt), segment: Number(segment) };
    });
}
