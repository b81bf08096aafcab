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
import { cpuOf } from '../lib/cpu';
import { medianTaskTimes, type TaskTimes, taskTimes, timeline } from '../lib/history';
import { median, percentile, round, startBenchStack } from '../lib/stack';

/**
 * bench/throughput (T2, O1): PAGES pages of LINES lines through the real workflow with the
 * simulated engine at LATENCY ms per line, at several total worker concurrencies (split
 * over replicas of at most 16 slots, as WORKER_CONCURRENCY allows). Reports segments per
 * second against the engine-bound limit (concurrency / latency) and per-job orchestration
 * overhead: from the first claim to the commit, minus the engine time. The engine time is
 * every engine call the job made (its `provider_calls`: segment, each line, polish) times the
 * latency, not the lines alone. Beside the plain limit, the packed limit: a page's calls run
 * one after another, so N pages on C slots need at least ceil(N / C) pages' engine time.
 * Then P5's overhead without queueing: the engine at BENCH_PROBE_LATENCY_MS (0, "no latency"
 * as P5 words it), submit to commit, on replicas that have run one batch already, each job
 * submitted once the one before it committed (nothing waits for a slot or for the cores);
 * beside it the same 16 pages at once, which wait for no slot but share the machine's cores.
 * `historyMs` splits the jobs' time by their histories: queue waits and runs of the workflow
 * tasks and of the activities (medians over the jobs). Each measure also gives the Temporal
 * server's CPU seconds a page (P6), read before the histories are.
 * Env: BENCH_PAGES (200), BENCH_LINES (30), BENCH_LATENCY_MS (200), BENCH_CONCURRENCY
 * (8,32,64; empty for the probe alone), BENCH_RUNS (3), BENCH_PROBE_LATENCY_MS (0), BENCH_READ_PAGES (unset: the engine
 * reads line by line, as remote vision engines do; 1: it reads each page in one pass of LINES
 * x LATENCY ms, as the tesseract engines do, P1).
 */
const pages = Number(process.env.BENCH_PAGES ?? 200);
const lines = Number(process.env.BENCH_LINES ?? 30);
const latencyMs = Number(process.env.BENCH_LATENCY_MS ?? 200);
// Empty: the overhead probe alone.
const concurrencies = (process.env.BENCH_CONCURRENCY ?? '8,32,64')
  .split(',')
  .filter((c) => c.trim() !== '')
  .map(Number);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const readPages = process.env.BENCH_READ_PAGES === '1';
const probeLatencyMs = Number(process.env.BENCH_PROBE_LATENCY_MS ?? 0);

const stack = await startBenchStack(10);
const workspace = (
  await stack.pool.query(`INSERT INTO workspaces (name) VALUES ('bench') RETURNING id`)
).rows[0].id;
const clientConnection = await Connection.connect({ address: stack.temporalAddress });
const temporal = new Client({ connection: clientConnection });
const SECRET = 'c'.repeat(64);

async function spawnReplicas(
  taskQueue: string,
  count: number,
  slots: number,
): Promise<ChildProcess[]> {
  const children: ChildProcess[] = [];
  const healthFiles: string[] = [];
  for (let i = 0; i < count; i++) {
    const health = join(tmpdir(), `quire-bench-tp-${process.pid}-${taskQueue}-${i}.json`);
    rmSync(health, { force: true });
    healthFiles.push(health);
    children.push(
      spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
        env: {
          ...process.env,
          DATABASE_URL: stack.databaseUrl,
          DATABASE_POOL_SIZE: String(slots + 5),
          TEMPORAL_ADDRESS: stack.temporalAddress,
          QUIRE_TASK_QUEUE: taskQueue,
          QUIRE_SECRET_KEY: SECRET,
          QUIRE_ENABLE_SIMULATED: '1',
          WORKER_CONCURRENCY: String(slots),
          QUIRE_HEALTH_FILE: health,
          QUIRE_WORKFLOW_BUNDLE: stack.workflowBundle,
          LOG_LEVEL: 'warn',
        },
        stdio: 'ignore',
      }),
    );
  }
  const deadline = Date.now() + 120_000;
  while (!healthFiles.every((f) => existsSync(f))) {
    if (Date.now() > deadline) {
      await stopReplicas(children);
      throw new Error('worker replicas did not become healthy');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return children;
}

async function stopReplicas(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve(undefined);
          child.once('exit', resolve);
          child.kill('SIGTERM');
        }),
    ),
  );
}

async function oneRun(
  concurrency: number,
  run: number,
  pageCount = pages,
  callLatencyMs = latencyMs,
  probe = false,
) {
  const replicas = Math.ceil(concurrency / 16);
  const config = parseConfig({
    QUIRE_TASK_QUEUE: `bench-throughput-${concurrency}-${run}`,
    QUIRE_DEFAULT_PROVIDER: 'simulated',
    QUIRE_ENABLE_SIMULATED: '1',
    WORKER_CONCURRENCY: String(Math.ceil(concurrency / replicas)),
    QUIRE_SECRET_KEY: SECRET,
    DATABASE_URL: stack.databaseUrl,
  });
  const client = QuireClient.fromConfig(config, temporal, createJobStore(stack.pool));
  // Replicas are separate worker processes, as in production: one Temporal worker per
  // process and task queue, at most 16 activity slots each.
  const workers = await spawnReplicas(
    config.QUIRE_TASK_QUEUE,
    replicas,
    Math.ceil(concurrency / replicas),
  );
  try {
    // The probe measures a running installation, not a cold start: the replicas' first pages
    // (module compilation, the workflow bundle's first load, connections opening) go first.
    if (!probe) {
      return {
        ...(await measure(client, concurrency, pageCount, callLatencyMs)),
        burstOverhead: [],
      };
    }
    await measure(client, concurrency, pageCount, callLatencyMs);
    // The same pages at once: no job waits for a slot, but they share the machine's cores.
    const burst = await measure(client, concurrency, pageCount, callLatencyMs);
    const alone = await measure(client, concurrency, pageCount, callLatencyMs, true);
    return { ...alone, burstOverhead: burst.unqueuedOverhead };
  } finally {
    // A failed run leaves no worker process behind.
    await stopReplicas(workers);
  }
}

async function measure(
  client: QuireClient,
  concurrency: number,
  pageCount: number,
  callLatencyMs: number,
  oneAtATime = false,
) {
  const pageIds: number[] = [];
  await withTransaction(stack.pool, async (tx) => {
    let position = await prepareItem(tx, workspace, 'bench');
    for (let i = 0; i < pageCount; i++) {
      const page = await createPage(
        tx,
        { workspaceId: workspace, itemId: 'bench', position: position++, kind: 'image' },
        'http://bench',
      );
      pageIds.push(page.pageId);
    }
  });
  const temporalCpuBefore = cpuOf(stack.temporalPid!).self;
  const started = Date.now();
  const start = (pageId: number) =>
    client.startJob({
      workspaceId: workspace,
      pageId,
      options: {
        simulated: { lines, latencyMs: callLatencyMs, ...(readPages ? { readPages } : {}) },
      },
    });
  const settle = (job: { workflowId: string }) =>
    temporal.workflow.getHandle(job.workflowId).result();
  const jobs: Array<{ jobId: string; workflowId: string }> = [];
  if (oneAtATime) {
    // Nothing queues: each job is submitted once the one before it has committed.
    for (const pageId of pageIds) {
      const job = await start(pageId);
      await settle(job);
      jobs.push(job);
    }
  } else {
    jobs.push(...(await Promise.all(pageIds.map(start))));
    await Promise.all(jobs.map(settle));
  }
  const seconds = (Date.now() - started) / 1000;
  // P6: the Temporal server's CPU a page, before the histories below are read.
  const temporalCpuPerPage = (cpuOf(stack.temporalPid!).self - temporalCpuBefore) / pageCount;
  const { rows } = await stack.pool.query(
    `SELECT j.status, extract(epoch FROM j.ended_at - j.created_at) AS queued_to_commit,
            extract(epoch FROM j.ended_at - a.started_at) AS claim_to_commit,
            (SELECT count(*)::int FROM provider_calls c WHERE c.job_id = j.id) AS calls
       FROM transcription_jobs j JOIN transcription_job_attempts a ON a.job_id = j.id AND a.attempt_number = 1
      WHERE j.id = ANY($1)`,
    [jobs.map((j) => j.jobId)],
  );
  // Every engine call of the job (segment, each line, polish) takes the latency.
  const engineSecondsOf = (r: { calls: number }) => (r.calls * callLatencyMs) / 1000;
  const overhead = rows.map((r) => Number(r.claim_to_commit) - engineSecondsOf(r));
  const segmentsPerSecond = (pageCount * lines) / seconds;
  const limit = concurrency / (latencyMs / 1000);
  const callsPerPage = median(rows.map((r) => r.calls));
  const packedLimit =
    (pageCount * lines) /
    (Math.ceil(pageCount / concurrency) * ((callsPerPage * callLatencyMs) / 1000));
  return {
    seconds,
    segmentsPerSecond,
    ratio: segmentsPerSecond / limit,
    packedRatio: segmentsPerSecond / packedLimit,
    limit,
    packedLimit,
    callsPerPage,
    completed: rows.filter((r) => r.status === 'completed').length,
    temporalCpuPerPage,
    overheadP50: percentile(overhead, 50),
    overheadP95: percentile(overhead, 95),
    submitToCommitP50: percentile(
      rows.map((r) => Number(r.queued_to_commit)),
      50,
    ),
    // Submit to commit minus engine time: the orchestration overhead when nothing queues.
    unqueuedOverhead: rows.map((r) => Number(r.queued_to_commit) - engineSecondsOf(r)),
    // Where each job's time went, from its history (read after the clock stopped).
    tasks: await Promise.all(
      jobs.map(async (j) => taskTimes(await timeline(temporal, j.workflowId))),
    ),
  };
}

try {
  process.stdout.write(`${JSON.stringify(await benchmark(), null, 2)}\n`);
} finally {
  // Whatever happened, the run's Temporal dev server and database go with it.
  await clientConnection.close();
  await stack.close();
}

async function benchmark() {
  const results = [];
  for (const concurrency of concurrencies) {
    const samples = [];
    for (let run = 0; run < runs; run++) samples.push(await oneRun(concurrency, run));
    results.push({
      concurrency,
      replicas: Math.ceil(concurrency / 16),
      runs,
      engineBoundSegmentsPerSecond: samples[0]!.limit,
      segmentsPerSecondMedian: round(median(samples.map((s) => s.segmentsPerSecond)), 1),
      ratioToEngineBoundMedian: round(median(samples.map((s) => s.ratio)), 3),
      engineCallsPerPage: samples[0]!.callsPerPage,
      packedEngineBoundSegmentsPerSecond: round(samples[0]!.packedLimit, 1),
      ratioToPackedEngineBoundMedian: round(median(samples.map((s) => s.packedRatio)), 3),
      orchestrationOverheadSeconds: {
        p50Median: round(median(samples.map((s) => s.overheadP50)), 3),
        p95Median: round(median(samples.map((s) => s.overheadP95)), 3),
      },
      submitToCommitP50SecondsMedian: round(median(samples.map((s) => s.submitToCommitP50)), 2),
      temporalCpuSecondsPerPageMedian: round(median(samples.map((s) => s.temporalCpuPerPage)), 4),
      historyMs: medianTaskTimes(samples.flatMap((s) => s.tasks)),
      completedJobs: samples.map((s) => s.completed),
    });
  }
  // Orchestration overhead without queueing: one job at a time on warmed replicas, so no job
  // waits for a slot or for the cores; beside it the same pages at once (fewer than slots).
  const probe: number[] = [];
  const burst: number[] = [];
  const tasks: TaskTimes[] = [];
  const probeTemporalCpu: number[] = [];
  for (let run = 0; run < runs; run++) {
    const sample = await oneRun(32, 100 + run, 16, probeLatencyMs, true);
    probeTemporalCpu.push(sample.temporalCpuPerPage);
    probe.push(...sample.unqueuedOverhead);
    burst.push(...sample.burstOverhead);
    tasks.push(...sample.tasks);
  }
  const overheadWithoutQueueing = {
    concurrency: 32,
    pages: 16,
    runs,
    submitted: 'one at a time',
    p50Seconds: round(percentile(probe, 50), 3),
    p95Seconds: round(percentile(probe, 95), 3),
    engineLatencyMs: probeLatencyMs,
    temporalCpuSecondsPerPageMedian: round(median(probeTemporalCpu), 4),
    // Medians over the probe's jobs: queue waits and runs of workflow tasks and activities.
    historyMs: medianTaskTimes(tasks),
    sixteenAtOnce: {
      p50Seconds: round(percentile(burst, 50), 3),
      p95Seconds: round(percentile(burst, 95), 3),
    },
  };
  const report = {
    bench: 'throughput',
    pages,
    lines,
    latencyMs,
    engineReads: readPages ? 'pages' : 'lines',
    target: 'ratio >= 0.9 at concurrency 32; overhead without queueing p95 < 0.25 s (P7)',
    results,
    overheadWithoutQueueing,
  };
  return report;
}
