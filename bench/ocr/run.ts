/**
 * bench/ocr (P4): OCR at the engine's speed, measured in one process tree and one run.
 *
 * 1. The limit: the bare `tesseract` CLI over N copies of the real fixture scan, one process
 *    per core at a time (`OMP_THREAD_LIMIT=1`), same model data as Quire (the npm package's
 *    best_int English model).
 * 2. Quire end to end with the worker's defaults (engine `auto`, QUIRE_ENGINE_THREADS = cores,
 *    WORKER_CONCURRENCY from them): one multipart upload of the same N files, timed to the
 *    last committed revision.
 * Prints pages/s of both and their ratio, the CER between Quire's committed text (and its raw
 * recognized lines) and the bare CLI's text of the same page, and the CPU seconds per page of
 * every process (worker, its engine children, upload server, Temporal, the PostgreSQL
 * backends of this database), orchestration being all of it minus the engine's, and the
 * worker's by thread (its main thread, V8's and libuv's, the SDK core's, its launcher). The image
 * derivatives (I4) are built by a schedule of the worker's; it is paused during each run and
 * triggered after it, so their CPU is a line of its own (P6), not orchestration. Then the
 * real Fraktur lines with `frk`: tesseract.js line by line (before) and the native engine
 * reading each as a page (after), CER against their ground truth.
 * The worker runs as `npm start` runs it, compiled (scripts/lib/workerBuild.ts);
 * BENCH_WORKER=tsx runs it from the sources through tsx instead, for comparison.
 * BENCH_MODE=dev (the default) runs Quire on a private dev stack: Temporal dev server, a fresh
 * database on the shared PostgreSQL, one worker, and the upload server
 * (bench/ocr/ingestServer.ts, the web's batch route without Next); it writes last-run.json.
 * BENCH_MODE=cluster runs it in cluster mode (scripts/lib/cluster.ts, D2): its own PostgreSQL
 * holding Quire's and Temporal's databases, the Temporal server on it, the S3-compatible
 * object server, one worker on the same defaults, one web replica on the console's production
 * build (web/.next-cluster, built first if stale), the batch through the web's
 * `POST /api/v1/workspaces/{ws}/batches` with an API key; CPU of the web replica's process
 * tree, the Temporal server, the object server and every process of that PostgreSQL, each
 * one line; it writes last-run-cluster.json (bench/ocr/topologies.ts).
 * Env: BENCH_MODE (dev), BENCH_PAGES (40), BENCH_RUNS (3), BENCH_WORKER (compiled, dev mode
 * only), BENCH_WORKER_NODE_FLAGS (none, dev mode only), BENCH_SETTLE_SECONDS (20),
 * BENCH_IDLE_SECONDS (20).
 */
import { spawn } from 'node:child_process';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Client, Connection } from '@temporalio/client';
import { segmentsOf } from '../../core/annotation';
import type { CallContext } from '../../core/provider';
import { characterErrors, corpusErrorRate, type ErrorCount } from '../../core/textMetrics';
import { getPage } from '../../db/pages';
import type { Pool } from '../../db/pool';
import { offlinePolish } from '../../providers/polish';
import { bundledLanguageDir, TesseractProvider } from '../../providers/tesseract';
import { NativeTesseractProvider } from '../../providers/tesseractNative';
import { CHECKPOINT_LOG, logCheckpointWrites } from '../../test/support/checkpointLog';
import {
  frakturLines,
  MANIFESTO_PAGE,
  makeTempDir,
  REPO_ROOT,
  removeDir,
} from '../../test/support/fixtures';
import { cpuOf } from '../lib/cpu';
import { median, round } from '../lib/stack';
import { requestsPerPage, temporalRequests } from '../lib/temporalRequests';
import {
  cpuDelta,
  namedDelta,
  startClusterTopology,
  startDevTopology,
  workerThreadDelta,
} from './topologies';

const PAGES = Math.max(1, Number(process.env.BENCH_PAGES ?? 40));
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const CORES = os.availableParallelism();
const FRAKTUR_DATA = '/usr/share/tesseract-ocr/5/tessdata';

const dir = await makeTempDir('quire-bench-ocr-');
const copies: string[] = [];
for (let i = 0; i < PAGES; i++) {
  const copy = path.join(dir, `page-${String(i).padStart(3, '0')}.png`);
  await copyFile(MANIFESTO_PAGE, copy);
  copies.push(copy);
}
const modelDir = path.join(dir, 'model');
await mkdir(modelDir);
await writeFile(
  path.join(modelDir, 'eng.traineddata'),
  gunzipSync(await readFile(path.join(bundledLanguageDir(), 'eng.traineddata.gz'))),
);
const loadBefore = os.loadavg();

/** The limit: the bare CLI over every copy, CORES processes at a time. */
async function bareRun(): Promise<{ seconds: number; cpuSeconds: number; texts: string[] }> {
  const texts: string[] = new Array(PAGES);
  const before = cpuOf(process.pid);
  const started = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < PAGES) {
      const i = next++;
      texts[i] = await runCli(copies[i]!);
    }
  };
  await Promise.all(Array.from({ length: CORES }, lane));
  const seconds = (performance.now() - started) / 1000;
  const after = cpuOf(process.pid);
  return { seconds, cpuSeconds: after.children - before.children, texts };
}

function runCli(image: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'tesseract',
      [image, 'stdout', '--tessdata-dir', modelDir, '-l', 'eng', '--oem', '1', '--psm', '3'],
      {
        env: { OMP_THREAD_LIMIT: '1' } as unknown as NodeJS.ProcessEnv,
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    const out: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(Buffer.concat(out).toString('utf8'))
        : reject(new Error(`tesseract ${code}`)),
    );
  });
}

// --- Quire: the worker, the upload route, Temporal and PostgreSQL as separate processes.
const MODE = process.env.BENCH_MODE === 'cluster' ? 'cluster' : 'dev';
const topology = MODE === 'cluster' ? await startClusterTopology() : await startDevTopology(dir);

// P6: the derivative schedule is held during the runs and triggered after each one.
const temporalConnection = await Connection.connect({
  address: topology.temporalAddress,
  tls: topology.temporalTls,
});
const derivativeSchedule = new Client({
  connection: temporalConnection,
  namespace: topology.namespace,
}).schedule.getHandle('quire-image-derivatives');
await derivativeSchedule.pause('bench/ocr measures image derivatives on their own line');

/**
 * Idle CPU per second of each process (pollers, relays, timers), measured before any upload,
 * once the processes have settled: a worker just started still compiles and runs its first
 * passes (0.026-0.038 CPU-s per second over its first 20 s, 0.002 after that).
 */
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 20);
const SETTLE_SECONDS = Number(process.env.BENCH_SETTLE_SECONDS ?? 20);
let idleRate: Record<string, number> = {};

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/**
 * Waits until every job of the batch has ended. A job's end commits an event, whose insert
 * notifies `quire_events`: the count runs when one arrives (the notifications of a commit
 * coalesced for 100 ms), and every 2 s in case none does. The run's time is read from the
 * jobs' `ended_at`, so how soon this wakes moves only when the CPU sample is taken; a count
 * every 100 ms instead was about 0.004 CPU-s/page of the PostgreSQL backends this bench
 * charges to Quire.
 */
async function untilBatchEnds(pool: Pool, batchId: string): Promise<void> {
  const client = await pool.connect();
  let notifications = 0;
  let onNext: (() => void) | undefined;
  const onNotification = () => {
    notifications++;
    onNext?.();
  };
  client.on('notification', onNotification);
  try {
    await client.query('LISTEN quire_events');
    for (;;) {
      const seen = notifications;
      const { rows } = await client.query(
        `SELECT count(*) FILTER (WHERE status IN ('pending', 'running'))::int AS active FROM transcription_jobs WHERE batch_id = $1`,
        [batchId],
      );
      if (rows[0].active === 0) return;
      // None came while the count ran: wait for one, or for the fallback.
      if (notifications === seen) {
        await new Promise<void>((resolve) => {
          const fallback = setTimeout(resolve, 2_000);
          onNext = () => {
            clearTimeout(fallback);
            resolve();
          };
        });
        onNext = undefined;
      }
      // The rest of a commit's notifications arrive within this.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    client.off('notification', onNotification);
    await client.query('UNLISTEN quire_events').catch(() => {});
    client.release();
  }
}

async function quireRun(bare: string[]) {
  const { pool, workspaceId } = topology;
  // D11: checkpoints go with the commit; the raw recognized lines are read from a copy of
  // each row as it was written (one more row per checkpoint, in PostgreSQL's line).
  await logCheckpointWrites(pool);
  const form = new FormData();
  for (const copy of copies) {
    form.append(
      'files[]',
      new Blob([await readFile(copy)], { type: 'image/png' }),
      path.basename(copy),
    );
  }
  const before = await topology.sample();
  const requestsBefore = await temporalRequests(topology.temporalMetricsUrl);
  const started = Date.now();
  const response = await topology.upload(form);
  if (response.status !== 201)
    throw new Error(`upload failed: ${response.status} ${await response.text()}`);
  const { batchId, pages } = (await response.json()) as {
    batchId: string;
    pages: Array<{ pageId: number }>;
  };
  const uploadedMs = Date.now() - started;
  await untilBatchEnds(pool, batchId);
  const after = await topology.sample();
  const requests = requestsPerPage(
    requestsBefore,
    await temporalRequests(topology.temporalMetricsUrl),
    PAGES,
  );
  const { rows: jobs } = await pool.query(
    `SELECT j.id, j.status, j.page_id, extract(epoch FROM j.created_at) * 1000 AS created,
            extract(epoch FROM j.ended_at) * 1000 AS ended,
            extract(epoch FROM a.started_at) * 1000 AS claimed,
            (SELECT extract(epoch FROM c.occurred_at) * 1000 FROM provider_calls c
              WHERE c.job_id = j.id AND c.operation = 'read' AND c.attempt_number = 1) AS read
       FROM transcription_jobs j
       LEFT JOIN transcription_job_attempts a ON a.job_id = j.id AND a.attempt_number = 1
      WHERE j.batch_id = $1`,
    [batchId],
  );
  const lastCommit = Math.max(...jobs.map((j) => Number(j.ended)));
  const seconds = (lastCommit - started) / 1000;
  // CER: committed text (polished) and raw recognized lines, against the bare CLI's text.
  const committed: ErrorCount[] = [];
  const raw: ErrorCount[] = [];
  const polishedBare: ErrorCount[] = [];
  for (const [i, { pageId }] of pages.entries()) {
    const page = await getPage(pool, workspaceId, pageId);
    const text = segmentsOf(page!.annotationPage)
      .map((s) => s.text)
      .join('\n');
    committed.push(characterErrors(bare[i]!, text));
    // The same offline polish over the bare CLI's lines: what Quire commits by design (it
    // joins words hyphenated across lines), so any difference left is the pipeline's.
    const bareLines = bare[i]!.split('\n').filter((l) => l.trim() !== '');
    const polished = await offlinePolish(
      bareLines.join('\n'),
      'image',
      new AbortController().signal,
    );
    polishedBare.push(characterErrors(polished.text, text));
    const job = jobs.find((j) => Number(j.page_id) === pageId);
    const { rows: lines } = await pool.query(
      `SELECT payload->>'text' AS text FROM ${CHECKPOINT_LOG} WHERE job_id = $1 AND stage = 'recognize' ORDER BY seq`,
      [job?.id],
    );
    raw.push(characterErrors(bare[i]!, lines.map((l) => l.text).join('\n')));
  }
  // I4 on its own line: the held derivative schedule runs now, alone, over this batch.
  const beforeDerivatives = await topology.sample();
  await derivativeSchedule.trigger();
  for (let waited = 0; ; waited += 200) {
    const { rows: left } = await pool.query(
      `SELECT count(*)::int AS n FROM pages WHERE id = ANY($1) AND derivative_key IS NULL AND derivative_error IS NULL`,
      [pages.map((p) => p.pageId)],
    );
    if (left[0].n === 0) break;
    if (waited > 600_000) throw new Error('the image derivatives were not made');
    await new Promise((r) => setTimeout(r, 200));
  }
  const derivativeDelta = cpuDelta(beforeDerivatives, await topology.sample());
  const derivativeCpu = sum(topology.derivativeProcesses.map((name) => derivativeDelta[name]!));
  const engine = after.engine - before.engine;
  const orchestrationByProcess = cpuDelta(before, after);
  const perProcess = { workerEngineChildren: engine, ...orchestrationByProcess };
  const workerThreads = workerThreadDelta(before, after, orchestrationByProcess.worker!);
  const postgresDatabases =
    before.postgresDatabases && after.postgresDatabases
      ? namedDelta(before.postgresDatabases, after.postgresDatabases)
      : undefined;
  const orchestration = sum(Object.values(orchestrationByProcess));
  // What the pages cost beyond what the same processes burn idle for as long (pollers,
  // relays): on a loaded machine a run lasts long and the idle share grows with it.
  const measuredSeconds = (Date.now() - started) / 1000;
  const idle = sum(Object.values(idleRate)) * measuredSeconds;
  const stage = (pick: (j: (typeof jobs)[number]) => number) =>
    round(median(jobs.map(pick)) / 1000, 2);
  return {
    seconds,
    completed: jobs.filter((j) => j.status === 'completed').length,
    uploadSeconds: uploadedMs / 1000,
    committedCer: corpusErrorRate(committed),
    rawCer: corpusErrorRate(raw),
    polishedBareCer: corpusErrorRate(polishedBare),
    perProcessCpuSeconds: perProcess,
    orchestrationCpuSecondsPerPage: orchestration / PAGES,
    orchestrationBeyondIdleCpuSecondsPerPage: Math.max(0, orchestration - idle) / PAGES,
    engineCpuSecondsPerPage: engine / PAGES,
    workerMinorFaultsPerPage: (after.workerMinorFaults - before.workerMinorFaults) / PAGES,
    workerThreads,
    postgresDatabases,
    derivativeCpuSecondsPerPage: derivativeCpu / PAGES,
    temporalRequestsPerPage: requests,
    stagesMedianSeconds: {
      uploadToClaim: stage((j) => Number(j.claimed) - started),
      claimToRead: stage((j) => Number(j.read) - Number(j.claimed)),
      readToCommit: stage((j) => Number(j.ended) - Number(j.read)),
    },
  };
}

const bareRuns: Array<Awaited<ReturnType<typeof bareRun>>> = [];
const quireRuns: Array<Awaited<ReturnType<typeof quireRun>>> = [];
try {
  await new Promise((r) => setTimeout(r, SETTLE_SECONDS * 1000));
  const before = await topology.sample();
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
  idleRate = Object.fromEntries(
    Object.entries(cpuDelta(before, await topology.sample())).map(([name, seconds]) => [
      name,
      seconds / IDLE_SECONDS,
    ]),
  );
  for (let run = 0; run < RUNS; run++) {
    const bare = await bareRun();
    bareRuns.push(bare);
    quireRuns.push(await quireRun(bare.texts));
  }
} finally {
  await temporalConnection.close();
  await topology.close();
}

// --- Fraktur, before (tesseract.js, line by line) and after (native, each line image as a page).
const ctx = (language: string): CallContext => ({
  signal: new AbortController().signal,
  language,
  options: {},
  callKey: 'bench',
});
const fraktur = await frakturLines();
const before = new TesseractProvider({ tessdataDir: FRAKTUR_DATA });
const after = new NativeTesseractProvider({ tessdataDir: FRAKTUR_DATA, threads: CORES });
const whole = { box: { x: 0, y: 0, w: 1_000_000, h: 1_000_000 } };
const beforeCounts: ErrorCount[] = [];
let startedAt = performance.now();
for (const line of fraktur) {
  const { text } = await before.recognizeLine(
    { path: line.image, mediaType: 'image/tiff' },
    whole,
    ctx('frk'),
  );
  beforeCounts.push(characterErrors(line.text, text));
}
const beforeSeconds = (performance.now() - startedAt) / 1000;
startedAt = performance.now();
const afterCounts = await Promise.all(
  fraktur.map(async (line) => {
    const read = await after.readPage({ path: line.image, mediaType: 'image/tiff' }, ctx('frk'));
    return characterErrors(line.text, read.lines.map((l) => l.text).join(' '));
  }),
);
const afterSeconds = (performance.now() - startedAt) / 1000;
await before.close();
await after.close();

const barePps = median(bareRuns.map((r) => PAGES / r.seconds));
const quirePps = median(quireRuns.map((r) => PAGES / r.seconds));
const report = {
  bench: 'ocr',
  ...topology.describe,
  machine: { cores: CORES, loadAverageBefore: loadBefore, loadAverageAfter: os.loadavg() },
  pages: PAGES,
  runs: RUNS,
  worker: topology.workerMode,
  fixture: path.basename(MANIFESTO_PAGE),
  targets: topology.targets,
  bare: {
    command: `tesseract <page> stdout -l eng --oem 1 --psm 3, ${CORES} at a time, OMP_THREAD_LIMIT=1, npm best_int model`,
    pagesPerSecondMedian: round(barePps, 3),
    cpuSecondsPerPageMedian: round(median(bareRuns.map((r) => r.cpuSeconds / PAGES)), 3),
    runsSeconds: bareRuns.map((r) => round(r.seconds, 2)),
  },
  quire: {
    pagesPerSecondMedian: round(quirePps, 3),
    ratioToBareMedian: round(median(quireRuns.map((r, i) => bareRuns[i]!.seconds / r.seconds)), 3),
    // P6 end to end with every CPU-second the batch causes: the image derivatives, built after
    // the run, counted as the time they would take on all the cores (D13 makes them between
    // engine work, so in use they fill the gaps; this is the bound, not a best case).
    ratioToBareWithDerivativesMedian: round(
      median(
        quireRuns.map(
          (r, i) =>
            bareRuns[i]!.seconds / (r.seconds + (r.derivativeCpuSecondsPerPage * PAGES) / CORES),
        ),
      ),
      3,
    ),
    committedCerMedian: round(median(quireRuns.map((r) => r.committedCer)), 4),
    rawLinesCerMedian: round(median(quireRuns.map((r) => r.rawCer)), 4),
    committedVsPolishedBareCerMedian: round(median(quireRuns.map((r) => r.polishedBareCer)), 4),
    orchestrationCpuSecondsPerPageMedian: round(
      median(quireRuns.map((r) => r.orchestrationCpuSecondsPerPage)),
      3,
    ),
    orchestrationBeyondIdleCpuSecondsPerPageMedian: round(
      median(quireRuns.map((r) => r.orchestrationBeyondIdleCpuSecondsPerPage)),
      3,
    ),
    idleCpuSecondsPerSecond: Object.fromEntries(
      Object.entries(idleRate).map(([k, v]) => [k, round(v, 4)]),
    ),
    engineCpuSecondsPerPageMedian: round(
      median(quireRuns.map((r) => r.engineCpuSecondsPerPage)),
      3,
    ),
    // P6: a count, like the requests below, that does not move with the machine's speed.
    workerMinorFaultsPerPageMedian: Math.round(
      median(quireRuns.map((r) => r.workerMinorFaultsPerPage)),
    ),
    imageDerivativesCpuSecondsPerPageMedian: round(
      median(quireRuns.map((r) => r.derivativeCpuSecondsPerPage)),
      3,
    ),
    // Requests the Temporal frontend answered during a run, per page (idle polls included).
    temporalRequestsPerPageMedian: Object.fromEntries(
      [...new Set(quireRuns.flatMap((r) => Object.keys(r.temporalRequestsPerPage)))]
        .sort()
        .map((op) => [
          op,
          round(median(quireRuns.map((r) => r.temporalRequestsPerPage[op] ?? 0)), 2),
        ]),
    ),
    runs: quireRuns.map((r) => ({
      seconds: round(r.seconds, 2),
      completed: r.completed,
      uploadSeconds: round(r.uploadSeconds, 2),
      committedCer: round(r.committedCer, 4),
      rawCer: round(r.rawCer, 4),
      cpuSecondsPerPage: Object.fromEntries(
        Object.entries(r.perProcessCpuSeconds).map(([k, v]) => [k, round(v / PAGES, 3)]),
      ),
      imageDerivativesCpuSecondsPerPage: round(r.derivativeCpuSecondsPerPage, 3),
      workerMinorFaultsPerPage: Math.round(r.workerMinorFaultsPerPage),
      // Where the worker's line ran: its threads by name, the exited ones, its launcher.
      workerCpuSecondsPerPageByThread: Object.fromEntries(
        Object.entries(r.workerThreads)
          .filter(([, seconds]) => seconds / PAGES >= 0.0005)
          .sort(([, a], [, b]) => b - a)
          .map(([name, seconds]) => [name, round(seconds / PAGES, 4)]),
      ),
      // Cluster mode: the PostgreSQL line by the database served (Temporal's apart from Quire's).
      ...(r.postgresDatabases && {
        postgresCpuSecondsPerPageByDatabase: Object.fromEntries(
          Object.entries(r.postgresDatabases).map(([name, seconds]) => [
            name,
            round(seconds / PAGES, 4),
          ]),
        ),
      }),
      stagesMedianSeconds: r.stagesMedianSeconds,
      temporalRequestsPerPage: r.temporalRequestsPerPage,
    })),
  },
  frakturFrk: {
    lines: fraktur.length,
    before: {
      engine: 'tesseract.js, line by line (PSM 7)',
      cer: round(corpusErrorRate(beforeCounts), 4),
      seconds: round(beforeSeconds, 2),
    },
    after: {
      engine: `native tesseract, each line image read as a page (PSM 3), ${CORES} at a time`,
      cer: round(corpusErrorRate(afterCounts), 4),
      seconds: round(afterSeconds, 2),
    },
  },
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
await writeFile(path.join(REPO_ROOT, topology.reportFile), `${JSON.stringify(report, null, 2)}\n`);
await removeDir(dir);
process.exit(0);
