import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { parseConfig, type QuireConfig } from '../../core/config';
import { SEARCH_ATTRIBUTES } from '../../core/temporal';
import { startTemporalToken } from '../../net/temporalToken';
import { startCluster } from '../../scripts/lib/cluster';
import { makeTempDir, REPO_ROOT, removeDir } from '../../test/support/fixtures';
import { connectTemporalClient, connectWorkerTemporal } from '../../worker/createWorker';
import { createLogger } from '../../worker/logger';
import { postgresByDatabase, runningPid, treeCpu } from '../lib/cpu';
import { median, round, startBenchStack } from '../lib/stack';
import { shapeActivities } from './activities';

/**
 * bench/temporal (P6): what the orchestration layer costs a page, apart from anything Quire
 * does. The Temporal server on PostgreSQL, as `npm run start:cluster` runs it (with
 * BENCH_MODE=dev, the dev server as bench/ocr's dev mode runs it), takes pages shaped as
 * workflows whose activities do no work (bench/temporal/workflows.ts), at the pace bench/ocr
 * commits real pages. Per page, for each shape: the Temporal server's CPU seconds, its
 * PostgreSQL's (by database), and the bench process's (the SDK's client and worker); each as
 * measured, and beyond the idle cost of the same window (measured just before). Shapes take
 * turns in each run, so a change in the machine's speed falls on all of them.
 * Env: BENCH_PAGES (40 a run), BENCH_RATE (1.3 pages a second), BENCH_RUNS (3),
 * BENCH_IDLE_MS (15000), BENCH_SHAPES (all, comma-separated), BENCH_REPORT (the report's path
 * in the repository, by mode by default); BENCH_STEP_MS (0), how long an
 * engine step takes, and BENCH_SLOTS (2), how many run at once (activity and local activity
 * slots alike): with BENCH_RATE=0 a run's pages start at once, like a batch upload, and the
 * engine steps set the pace.
 * The billable actions a page costs, from the histories of Quire's own workflow rather than
 * these shapes: bench/temporal/actions.ts (D14).
 */
const pages = Number(process.env.BENCH_PAGES ?? 40);
const rate = Number(process.env.BENCH_RATE ?? 1.3);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const idleMs = Number(process.env.BENCH_IDLE_MS ?? 15_000);
const stepMs = Number(process.env.BENCH_STEP_MS ?? 0);
const slots = Number(process.env.BENCH_SLOTS ?? 2);
const SHAPES = {
  emptyShape: 'one workflow task, nothing else (T1: one workflow per page)',
  localShape: 'the release marker, status and stage; claim and engine step as local activities',
  quireNoHeartbeatShape: 'as before D14, but the engine step does not heartbeat at its start',
  quireShape:
    "today's page (D14): local claim, engine step as an activity heartbeating at its start, two workflow tasks, no status upsert",
  quireWithStatusShape:
    'the page before D14: as today, with the status upserted at its start and end',
} as const;
type Shape = keyof typeof SHAPES;
const shapes = (process.env.BENCH_SHAPES?.split(',') ?? Object.keys(SHAPES)) as Shape[];
for (const shape of shapes) if (!(shape in SHAPES)) throw new Error(`unknown shape ${shape}`);
const TASK_QUEUE = 'bench-temporal';
const SETTLE_MS = 5_000;
const WARM_UP_PAGES = 10;
/** After the last page: the server's asynchronous work (visibility, transfer, timers) lands. */
const TAIL_MS = 3_000;
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Sample {
  at: number;
  temporal: number;
  postgres: Record<string, number>;
  sdk: number;
}

/** What a page's CPU is reported by: each process, and their sum. */
const PARTS = ['temporal', 'postgres', 'sdk', 'total'] as const;
type Parts = Record<(typeof PARTS)[number], number>;
const byPart = (value: (part: keyof Parts) => number): Parts =>
  Object.fromEntries(PARTS.map((part) => [part, value(part)])) as Parts;

/** CPU seconds between two samples, by part and PostgreSQL's by database. */
function delta(before: Sample, after: Sample) {
  const postgres = Object.fromEntries(
    Object.entries(after.postgres).map(([name, s]) => [name, s - (before.postgres[name] ?? 0)]),
  );
  const parts = {
    temporal: after.temporal - before.temporal,
    postgres: Object.values(postgres).reduce((a, b) => a + b, 0),
    sdk: after.sdk - before.sdk,
  };
  return {
    seconds: (after.at - before.at) / 1000,
    parts: { ...parts, total: parts.temporal + parts.postgres + parts.sdk },
    postgresByDatabase: postgres,
  };
}

interface RunEntry {
  run: number;
  seconds: number;
  perPage: Parts;
  beyondIdlePerPage: Parts;
  postgresPerPageByDatabase: Record<string, number>;
  idleCpuSecondsPerSecond: Parts;
  latencyMedianMs: number;
}

/** Where the pages go: cluster mode's server on PostgreSQL, or dev mode's (SQLite, in memory). */
interface Server {
  describe: Record<string, string>;
  reportFile: string;
  /** The settings a Quire process of this installation reads (its Temporal address, token). */
  config: QuireConfig;
  temporalPid: number;
  /** Cluster mode: the postmaster of the server's PostgreSQL, whose processes are counted. */
  postmaster?: number;
  close(): Promise<void>;
}

async function startClusterServer(): Promise<Server> {
  const dir = await makeTempDir('quire-bench-temporal-');
  const cluster = await startCluster({
    root: REPO_ROOT,
    dir,
    secretKey: randomBytes(32).toString('hex'),
    workers: 0,
    webReplicas: 0,
    webDistDir: '.next-cluster',
    ui: false,
    fastPostgres: true,
    env: { LOG_LEVEL: 'warn' },
    log,
  });
  const close = async () => {
    await cluster.stop();
    await removeDir(dir);
  };
  try {
    return {
      describe: {
        mode: 'cluster',
        temporal: 'server on PostgreSQL (persistence and SQL visibility), as npm run start:cluster',
        postgres: 'own instance, fsync off',
      },
      reportFile: 'bench/temporal/last-run.json',
      config: parseConfig(cluster.quireEnv),
      temporalPid: runningPid('the Temporal server', cluster.temporal.pid()),
      postmaster: runningPid('PostgreSQL', cluster.postgres.pid()),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

async function startDevServer(): Promise<Server> {
  const stack = await startBenchStack(1);
  return {
    describe: { mode: 'dev', temporal: 'the CLI dev server (SQLite in memory), as bench/ocr dev' },
    reportFile: 'bench/temporal/last-run-dev.json',
    config: parseConfig({ TEMPORAL_ADDRESS: stack.temporalAddress }),
    temporalPid: runningPid('the Temporal dev server', stack.temporalPid),
    close: () => stack.close(),
  };
}

async function main() {
  // Standard output carries the report alone: the SDK's warnings, its core's too, go to stderr.
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) =>
      process.stderr.write(`sdk: ${entry.level} ${entry.message}\n`),
    ),
    telemetryOptions: { logging: { forward: {} } },
  });
  const server =
    process.env.BENCH_MODE === 'dev' ? await startDevServer() : await startClusterServer();
  const { config, temporalPid, postmaster } = server;
  // As a Quire worker connects (worker/main.ts): the same options, the same token.
  const logger = createLogger('bench-temporal', 'warn', process.stderr);
  const token = await startTemporalToken(config, { logger });
  try {
    const client = await connectTemporalClient(config, token);
    const worker = await Worker.create({
      connection: await connectWorkerTemporal(config, token, logger),
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: TASK_QUEUE,
      workflowsPath: path.join(REPO_ROOT, 'bench/temporal/workflows.ts'),
      activities: shapeActivities(stepMs),
      maxConcurrentActivityTaskExecutions: slots,
      maxConcurrentLocalActivityExecutions: slots,
    });
    const sample = (): Sample => {
      const usage = process.cpuUsage();
      return {
        at: Date.now(),
        temporal: treeCpu(temporalPid),
        postgres: postmaster === undefined ? {} : postgresByDatabase(postmaster),
        sdk: (usage.user + usage.system) / 1e6,
      };
    };

    let started = 0;
    /** One run of a shape: `pages` workflows started at `rate`, each awaited to its end. */
    const runShape = async (shape: Shape, count = pages) => {
      const latencies: number[] = [];
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const due = rate > 0 ? t0 + (i * 1000) / rate : t0;
          await sleep(Math.max(0, due - performance.now()));
          const begun = performance.now();
          started += 1;
          const handle = await client.workflow.start(shape, {
            taskQueue: TASK_QUEUE,
            workflowId: `bench-${shape}-${started}-${randomBytes(4).toString('hex')}`,
            // As Quire's jobs start (client/index.ts): the same attributes and memo.
            typedSearchAttributes: [
              { key: SEARCH_ATTRIBUTES.workspaceId, value: 1 },
              { key: SEARCH_ATTRIBUTES.jobId, value: String(started) },
              { key: SEARCH_ATTRIBUTES.pageId, value: started },
              { key: SEARCH_ATTRIBUTES.status, value: 'pending' },
              { key: SEARCH_ATTRIBUTES.provider, value: 'tesseract' },
            ],
            memo: { workspaceId: 1, pageId: started, kind: 'image', batchId: 1 },
          });
          await handle.result();
          latencies.push(performance.now() - begun);
        }),
      );
      return latencies;
    };

    const results = Object.fromEntries(shapes.map((shape) => [shape, [] as RunEntry[]]));
    await worker.runUntil(async () => {
      // Warm-up: the worker's first tasks and the server's caches, not measured.
      for (const shape of shapes) await runShape(shape, WARM_UP_PAGES);
      for (let run = 0; run < runs; run++) {
        const order = shapes.map((_, i) => shapes[(i + run) % shapes.length]!);
        for (const shape of order) {
          await sleep(SETTLE_MS);
          const idleStart = sample();
          await sleep(idleMs);
          const idleEnd = sample();
          const idle = delta(idleStart, idleEnd);
          const latencies = await runShape(shape);
          await sleep(TAIL_MS);
          const used = delta(idleEnd, sample());
          const perPage = (seconds: number) => round(seconds / pages, 4);
          const idleRate = (part: keyof Parts) => idle.parts[part] / idle.seconds;
          const entry: RunEntry = {
            run: run + 1,
            seconds: round(used.seconds, 1),
            perPage: byPart((part) => perPage(used.parts[part])),
            beyondIdlePerPage: byPart((part) =>
              perPage(used.parts[part] - idleRate(part) * used.seconds),
            ),
            postgresPerPageByDatabase: Object.fromEntries(
              Object.entries(used.postgresByDatabase).map(([name, s]) => [name, perPage(s)]),
            ),
            idleCpuSecondsPerSecond: byPart((part) => round(idleRate(part), 4)),
            latencyMedianMs: round(median(latencies), 0),
          };
          results[shape]!.push(entry);
          log(`run ${run + 1} ${shape}: ${JSON.stringify(entry.perPage)}`);
        }
      }
    });

    const summary = Object.fromEntries(
      shapes.map((shape) => {
        const medianOf = (pick: (entry: RunEntry) => number) =>
          round(median(results[shape]!.map(pick)), 4);
        return [
          shape,
          {
            what: SHAPES[shape],
            perPageMedian: byPart((part) => medianOf((e) => e.perPage[part])),
            beyondIdlePerPageMedian: byPart((part) => medianOf((e) => e.beyondIdlePerPage[part])),
            latencyMedianMs: medianOf((e) => e.latencyMedianMs),
          },
        ];
      }),
    );
    const report = {
      bench: 'temporal',
      topology: {
        ...server.describe,
        sdk: 'one client and one worker in the bench process, activities doing no work',
      },
      machine: { cores: cpus().length },
      pagesPerRun: pages,
      ratePerSecond: rate > 0 ? rate : 'all at once',
      engineStepMs: stepMs,
      engineSlots: slots,
      runs,
      summary,
      runsByShape: results,
    };
    const out = JSON.stringify(report, null, 2);
    // BENCH_REPORT: a run of some shapes kept apart from the full run's report.
    writeFileSync(path.join(REPO_ROOT, process.env.BENCH_REPORT ?? server.reportFile), `${out}\n`);
    process.stdout.write(`${out}\n`);
  } finally {
    token?.close();
    await server.close();
  }
}

// The SDK's runtime, forwarding its core's logs, keeps the event loop alive once all is done.
main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error instanceof Error ? error.stack : error}\n`);
    process.exit(1);
  },
);
