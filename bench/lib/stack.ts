import { randomBytes } from 'node:crypto';
import { bundleWorkflowCode } from '@temporalio/worker';
import pg from 'pg';
import { migrate } from '../../db/migrate';
import { createPool, type Pool } from '../../db/pool';
import { ensurePostgres } from '../../scripts/lib/postgres';
import {
  type DevServer,
  findOrBuildTemporal,
  freePort,
  startDevServer,
} from '../../scripts/lib/temporal';
import { WORKFLOWS_PATH } from '../../worker/createWorker';

/**
 * A private stack for one benchmark run: a fresh database and an in-memory Temporal dev
 * server on a free port, torn down afterwards. Nothing is shared with `npm start`.
 */
export interface BenchStack {
  databaseUrl: string;
  pool: Pool;
  temporalAddress: string;
  workflowBundle: string;
  /** The Temporal dev server's process, for benchmarks that count its CPU. */
  temporalPid: number | undefined;
  /** The dev server's Prometheus endpoint, for benchmarks that count its requests. */
  temporalMetricsUrl: string;
  close(): Promise<void>;
}

const ADMIN = process.env.QUIRE_BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function startBenchStack(poolSize = 20): Promise<BenchStack> {
  await ensurePostgres(ADMIN, () => {});
  const name = `quire_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  await migrate(databaseUrl);
  const metricsPort = await freePort();
  const server: DevServer = await startDevServer(
    findOrBuildTemporal(() => {}),
    {
      headless: true,
      metricsPort,
      // The server's own log, when a run needs looking into.
      logFile: process.env.QUIRE_BENCH_TEMPORAL_LOG,
    },
  );
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: silent });
  const { writeFileSync } = await import('node:fs');
  const workflowBundle = `/tmp/quire-bench-bundle-${process.pid}.js`;
  writeFileSync(workflowBundle, code);
  const pool = createPool(databaseUrl, poolSize);
  return {
    databaseUrl,
    pool,
    temporalAddress: server.address,
    workflowBundle,
    temporalPid: server.process.pid,
    temporalMetricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    async close() {
      await pool.end();
      await server.stop();
      const c = new pg.Client({ connectionString: ADMIN });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;
