import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import { EventSource } from 'eventsource';
import { QuireClient } from '../../client';
import { parseConfig } from '../../core/config';
import { appendEvent } from '../../db/events';
import { createPage, prepareItem } from '../../db/ingest';
import { createJobStore } from '../../db/jobStore';
import { createPool, type Pool, withTransaction } from '../../db/pool';
import { createWorkspace } from '../../db/workspaces';
import { startCluster } from '../../scripts/lib/cluster';
import { temporalTlsConfig } from '../../scripts/lib/clusterTls';
import { median, percentile, round, startBenchStack } from '../lib/stack';

/**
 * bench/cluster (D2, D3, S1): the same batch through cluster mode (Temporal server on
 * PostgreSQL, object store, three worker processes, two web replicas) and through the dev
 * stack (Temporal dev server on SQLite, three worker processes) in the same run, with the
 * throughput ratio; the recovery time of a SIGKILLed worker in cluster mode; and the event
 * stream over real sockets: SSE_CLIENTS EventSource clients spread over both web replicas,
 * commit-to-receipt latency of each event at each client.
 * Env: BENCH_PAGES (40), BENCH_LINES (10), BENCH_LATENCY_MS (100), BENCH_RUNS (3),
 * BENCH_SSE_CLIENTS (200), BENCH_SSE_EVENTS (100). Needs the console built into
 * web/.next-cluster (the cluster tests build it).
 */
const pages = Number(process.env.BENCH_PAGES ?? 40);
const lines = Number(process.env.BENCH_LINES ?? 10);
const latencyMs = Number(process.env.BENCH_LATENCY_MS ?? 100);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const sseClients = Number(process.env.BENCH_SSE_CLIENTS ?? 200);
const sseEvents = Number(process.env.BENCH_SSE_EVENTS ?? 100);
const WORKERS = 3;
const SLOTS = 4;
const SECRET = 'd'.repeat(64);
const root = resolve('.');
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

interface Target {
  name: 'cluster' | 'dev';
  pool: Pool;
  temporal: Client;
  client: QuireClient;
  workspaceId: number;
}

async function target(
  name: Target['name'],
  databaseUrl: string,
  address: string,
  pool: Pool,
  tls?: TLSConfig,
): Promise<Target> {
  const connection = await Connection.connect({ address, tls });
  const temporal = new Client({ connection });
  const config = parseConfig({
    QUIRE_SECRET_KEY: SECRET,
    DATABASE_URL: databaseUrl,
    QUIRE_ENABLE_SIMULATED: '1',
    QUIRE_DEFAULT_PROVIDER: 'simulated',
  });
  const client = QuireClient.fromConfig(config, temporal, createJobStore(pool), ['simulated']);
  const { rows } = await pool.query(`INSERT INTO workspaces (name) VALUES ('bench') RETURNING id`);
  return { name, pool, temporal, client, workspaceId: rows[0].id };
}

async function batch(t: Target, count: number): Promise<{ seconds: number; jobIds: string[] }> {
  const pageIds: number[] = [];
  await withTransaction(t.pool, async (tx) => {
    let position = await prepareItem(tx, t.workspaceId, 'bench');
    for (let i = 0; i < count; i++) {
      const page = await createPage(
        tx,
        { workspaceId: t.workspaceId, itemId: 'bench', position: position++, kind: 'image' },
        'http://bench',
      );
      pageIds.push(page.pageId);
    }
  });
  const started = Date.now();
  const jobs = await Promise.all(
    pageIds.map((pageId) =>
      t.client.startJob({
        workspaceId: t.workspaceId,
        pageId,
        options: { simulated: { lines, latencyMs } },
      }),
    ),
  );
  await Promise.all(jobs.map((j) => t.temporal.workflow.getHandle(j.workflowId).result()));
  return { seconds: (Date.now() - started) / 1000, jobIds: jobs.map((j) => j.jobId) };
}

function devWorkers(databaseUrl: string, address: string, bundle: string): ChildProcess[] {
  return Array.from({ length: WORKERS }, (_, i) => {
    const health = join(tmpdir(), `quire-bench-cluster-dev-${process.pid}-${i}.json`);
    rmSync(health, { force: true });
    return spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: address,
        QUIRE_SECRET_KEY: SECRET,
        QUIRE_ENABLE_SIMULATED: '1',
        WORKER_CONCURRENCY: String(SLOTS),
        QUIRE_HEALTH_FILE: health,
        QUIRE_WORKFLOW_BUNDLE: bundle,
        LOG_LEVEL: 'warn',
      },
      stdio: 'ignore',
    });
  });
}

async function sseLatency(webUrls: string[], pool: Pool): Promise<Record<string, number>> {
  const { workspace, apiKey } = await createWorkspace(pool, 'bench-sse');
  const committedAt = new Map<number, number>();
  const receipts: Array<{ id: number; at: number }> = [];
  const sources: EventSource[] = [];
  let ready = 0;
  for (let i = 0; i < sseClients; i++) {
    const url = `${webUrls[i % webUrls.length]}/api/v1/workspaces/${workspace.id}/events`;
    const source = new EventSource(url, {
      fetch: (input, init) =>
        fetch(input, {
          ...init,
          headers: { ...(init?.headers ?? {}), Authorization: `Bearer ${apiKey}` },
        }),
    });
    source.addEventListener('dev.quire.stream.ready', () => {
      ready += 1;
    });
    source.addEventListener('dev.quire.transcription.task.started', (event) => {
      // Matched to the commit time afterwards: a client may hear of an event before the
      // committing connection has handed back its COMMIT.
      receipts.push({
        id: Number(event.lastEventId),
        at: performance.timeOrigin + performance.now(),
      });
    });
    sources.push(source);
  }
  const deadline = Date.now() + 120_000;
  while (ready < sseClients && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (let n = 0; n < sseEvents; n++) {
    const id = await withTransaction(pool, async (tx) => {
      const eventId = await appendEvent(tx, {
        workspaceId: workspace.id,
        type: 'dev.quire.transcription.task.started',
        subject: 'transcription-jobs/bench',
        data: { n },
      });
      return eventId;
    });
    committedAt.set(id, performance.timeOrigin + performance.now());
    await new Promise((r) => setTimeout(r, 50));
  }
  const expected = ready * sseEvents;
  const waitUntil = Date.now() + 60_000;
  while (receipts.length < expected && Date.now() < waitUntil)
    await new Promise((r) => setTimeout(r, 200));
  for (const source of sources) source.close();
  const latencies = receipts.flatMap(({ id, at }) => {
    const committed = committedAt.get(id);
    return committed === undefined ? [] : [Math.max(0, at - committed)];
  });
  return {
    clients: sseClients,
    connected: ready,
    events: sseEvents,
    received: receipts.length,
    expected,
    p50Ms: round(percentile(latencies, 50), 1),
    p95Ms: round(percentile(latencies, 95), 1),
  };
}

const dir = mkdtempSync(join(tmpdir(), 'quire-bench-cluster-'));
log('starting cluster mode...');
const cluster = await startCluster({
  root,
  dir,
  secretKey: SECRET,
  workers: WORKERS,
  webReplicas: 2,
  webDistDir: process.env.QUIRE_TEST_CLUSTER_WEB_DIST ?? '.next-cluster',
  ui: false,
  fastPostgres: true,
  env: {
    QUIRE_ENABLE_SIMULATED: '1',
    WORKER_CONCURRENCY: String(SLOTS),
    QUIRE_HEARTBEAT_TIMEOUT_MS: '5000',
    QUIRE_SSE_MAX_STREAMS_PER_KEY: String(sseClients),
    QUIRE_SSE_MAX_STREAMS_PER_WORKSPACE: String(sseClients),
    LOG_LEVEL: 'warn',
  },
  log,
});
log('starting the dev stack...');
const dev = await startBenchStack(20);
const devChildren = devWorkers(dev.databaseUrl, dev.temporalAddress, dev.workflowBundle);
const clusterPool = createPool(cluster.databaseUrl, 20);
const targets = [
  await target(
    'cluster',
    cluster.databaseUrl,
    cluster.temporalAddress,
    clusterPool,
    temporalTlsConfig(cluster.temporalTls, 'client'),
  ),
  await target('dev', dev.databaseUrl, dev.temporalAddress, dev.pool),
];
try {
  await new Promise((r) => setTimeout(r, 5_000));
  const seconds: Record<string, number[]> = { cluster: [], dev: [] };
  for (let run = 0; run < runs; run++) {
    for (const t of targets) {
      const { seconds: s } = await batch(t, pages);
      seconds[t.name]!.push(s);
      log(`${t.name} run ${run + 1}: ${s.toFixed(1)} s`);
    }
  }
  const segmentsPerSecond = (name: string) =>
    round((pages * lines) / median(seconds[name] as number[]), 1);

  // Recovery in cluster mode: a worker SIGKILLed while the batch runs. Its engine calls in
  // flight are interrupted; the figure is the time from the kill to the first of them being
  // claimed again elsewhere (closing the old attempt `lease_expired`). A run where the killed
  // worker held no engine call has nothing to recover and is counted apart.
  const recoveries: number[] = [];
  let nothingInFlight = 0;
  for (let run = 0; run < runs; run++) {
    const t = targets[0] as Target;
    let batchDone = false;
    const running = batch(t, pages).finally(() => {
      batchDone = true;
    });
    await new Promise((r) => setTimeout(r, 3_000));
    const faultAt = new Date();
    await cluster.workers[0]!.kill('SIGKILL');
    let recovered: number | undefined;
    while (!batchDone && recovered === undefined) {
      const { rows } = await t.pool.query(
        `SELECT min(ended_at) AS at FROM transcription_job_attempts WHERE outcome = 'lease_expired' AND ended_at > $1`,
        [faultAt],
      );
      if (rows[0].at) recovered = (new Date(rows[0].at).getTime() - faultAt.getTime()) / 1000;
      else await new Promise((r) => setTimeout(r, 100));
    }
    await running;
    if (recovered === undefined) nothingInFlight += 1;
    else recoveries.push(recovered);
    log(
      `recovery run ${run + 1}: ${recovered === undefined ? 'no engine call in flight' : `${recovered.toFixed(1)} s`}`,
    );
    await cluster.workers[0]!.start();
  }

  const sse = await sseLatency(
    cluster.webs.map((w) => w.url),
    clusterPool,
  );
  const result = {
    bench: 'cluster',
    pages,
    lines,
    latencyMs,
    runs,
    workers: WORKERS,
    slotsPerWorker: SLOTS,
    throughput: {
      clusterSegmentsPerSecond: segmentsPerSecond('cluster'),
      devSegmentsPerSecond: segmentsPerSecond('dev'),
      ratioClusterToDev: round(segmentsPerSecond('cluster') / segmentsPerSecond('dev'), 3),
      clusterSeconds: seconds.cluster,
      devSeconds: seconds.dev,
    },
    workerKillRecovery: {
      heartbeatTimeoutSeconds: 5,
      secondsToNextClaimMedian: recoveries.length ? round(median(recoveries), 2) : null,
      all: recoveries.map((r) => round(r, 2)),
      runsWithNothingInFlight: nothingInFlight,
    },
    sseOverSockets: sse,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(join(root, 'bench/cluster/last-run.json'), `${JSON.stringify(result, null, 2)}\n`);
} finally {
  for (const child of devChildren) child.kill('SIGTERM');
  for (const t of targets) await t.temporal.connection.close().catch(() => {});
  await clusterPool.end().catch(() => {});
  await cluster.stop();
  await dev.close();
  if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
}
