import { Client, Connection } from '@temporalio/client';
import { QuireClient } from '../../client';
import { parseConfig } from '../../core/config';
import { createJobStore } from '../../db/jobStore';
import { timeline } from '../lib/history';
import { benchPages, benchWorkspace, spawnSimulatedWorker } from '../lib/simulatedFleet';
import { median, round, startBenchStack } from '../lib/stack';

/**
 * bench/priority (P8): one page a person waits for (`priority: 'interactive'`), submitted while
 * BENCH_BACKLOG bulk pages of the same workspace are queued, against the same kind of page on
 * the idle stack, in the same run; beside it, a bulk page submitted at the same moment, the
 * previous behaviour's figure. Same workspace throughout, so fairness (M5) does not help the
 * person's page: only the priority key does. Target: at most 2x the idle page (the median of
 * three idle pages after one that warms the worker). Each run also prints the person's
 * history step by step (`personTimelineMs`, and `aloneTimelineMs` for the idle page), so a
 * slow page shows where it waited, and the backlog's pace meanwhile.
 * Env: BENCH_BACKLOG (2000), BENCH_LINES (4), BENCH_LATENCY_MS (50), BENCH_SLOTS (8),
 * BENCH_RUNS (3). Prints one JSON object.
 */
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 2000);
const lines = Number(process.env.BENCH_LINES ?? 4);
const latencyMs = Number(process.env.BENCH_LATENCY_MS ?? 50);
const slots = Number(process.env.BENCH_SLOTS ?? 8);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const SECRET = 'p'.repeat(64);

const stack = await startBenchStack(20);
const clientConnection = await Connection.connect({ address: stack.temporalAddress });
const temporal = new Client({ connection: clientConnection });

/** Starts jobs for the pages, a few at a time, in page order. */
async function submit(
  client: QuireClient,
  workspaceId: number,
  pageIds: number[],
  priority?: 'interactive',
) {
  const jobs: Array<{ jobId: string; workflowId: string }> = [];
  const width = 16;
  for (let i = 0; i < pageIds.length; i += width) {
    const started = await Promise.all(
      pageIds.slice(i, i + width).map((pageId) =>
        client.startJob({
          workspaceId,
          pageId,
          options: { simulated: { lines, latencyMs } },
          ...(priority ? { priority } : {}),
        }),
      ),
    );
    jobs.push(...started);
  }
  return jobs;
}

/** Seconds from each job's creation to its commit. */
async function submitToCommit(jobIds: string[]): Promise<number[]> {
  const { rows } = await stack.pool.query(
    `SELECT extract(epoch FROM ended_at - created_at)::float AS s FROM transcription_jobs
      WHERE id = ANY($1) AND status = 'completed'`,
    [jobIds],
  );
  if (rows.length !== jobIds.length) throw new Error('not every job completed');
  return rows.map((r) => Number(r.s));
}

/**
 * Whether the job commits within `ms`, read from the database rather than by awaiting its
 * workflow, whose result call would outlive the run's connection.
 */
async function committedWithin(jobId: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    const { rows } = await stack.pool.query(`SELECT status FROM transcription_jobs WHERE id = $1`, [
      jobId,
    ]);
    if (rows[0]?.status === 'completed') return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function backlogCounts(jobIds: string[]): Promise<{ done: number; waiting: number }> {
  const { rows } = await stack.pool.query(
    `SELECT count(*) FILTER (WHERE status = 'completed')::int AS done,
            count(*) FILTER (WHERE status IN ('pending', 'running'))::int AS waiting
       FROM transcription_jobs WHERE id = ANY($1)`,
    [jobIds],
  );
  return { done: rows[0].done, waiting: rows[0].waiting };
}

async function oneRun(run: number) {
  const taskQueue = `bench-priority-${run}`;
  const config = parseConfig({
    QUIRE_TASK_QUEUE: taskQueue,
    QUIRE_DEFAULT_PROVIDER: 'simulated',
    QUIRE_ENABLE_SIMULATED: '1',
    QUIRE_SECRET_KEY: SECRET,
    DATABASE_URL: stack.databaseUrl,
  });
  const client = QuireClient.fromConfig(config, temporal, createJobStore(stack.pool));
  const worker = await spawnSimulatedWorker(stack, { taskQueue, slots, secret: SECRET });
  try {
    const ws = await benchWorkspace(stack.pool, `priority-${run}`);
    const settle = (jobs: Array<{ workflowId: string }>) =>
      Promise.all(jobs.map((j) => temporal.workflow.getHandle(j.workflowId).result()));

    // The person's page on the idle stack: one page to warm the worker, then three one at a
    // time, their median.
    const idle: number[] = [];
    let alone: Array<{ jobId: string; workflowId: string }> = [];
    for (let i = 0; i <= 3; i++) {
      alone = await submit(client, ws, await benchPages(stack, ws, 1), 'interactive');
      await settle(alone);
      if (i > 0) idle.push(...(await submitToCommit(alone.map((j) => j.jobId))));
    }
    const aloneSeconds = median(idle);
    const aloneTimelineMs = await timeline(temporal, alone[0]!.workflowId);

    // The backlog, then the person's page and a bulk page at the same moment.
    const backlogStart = Date.now();
    const backlog = await submit(client, ws, await benchPages(stack, ws, BACKLOG));
    const backlogSubmitSeconds = (Date.now() - backlogStart) / 1000;
    const [personPage, bulkPage] = await benchPages(stack, ws, 2);
    const [person, bulk] = await Promise.all([
      submit(client, ws, [personPage!], 'interactive'),
      submit(client, ws, [bulkPage!]),
    ]);
    await settle(person!);
    const [behindSeconds] = await submitToCommit(person!.map((j) => j.jobId));
    const personTimelineMs = await timeline(temporal, person![0]!.workflowId);
    const backlogIds = backlog.map((j) => j.jobId);
    const counted = await backlogCounts(backlogIds);
    // The bulk page sent with it waits behind the backlog; its wait is bounded here, not run
    // to the end (that is the whole backlog's time). Meanwhile the backlog's own pace is
    // measured: the person's page must not have been bought with the batches' throughput.
    const windowStart = Date.now();
    const bulkDone = await committedWithin(bulk![0]!.jobId, 20_000);
    const later = await backlogCounts(backlogIds);
    const backlogPagesPerSecond = (later.done - counted.done) / ((Date.now() - windowStart) / 1000);
    return {
      aloneSeconds: aloneSeconds!,
      behindSeconds: behindSeconds!,
      ratio: behindSeconds! / aloneSeconds!,
      backlogSubmitSeconds,
      backlogCommittedWhenPersonDone: counted.done,
      backlogWaitingWhenPersonDone: counted.waiting,
      bulkPageDoneWithin20sAfter: bulkDone,
      backlogPagesPerSecond,
      aloneTimelineMs,
      personTimelineMs,
    };
  } finally {
    // The backlog stays on this run's queue, which no worker polls again.
    await new Promise((resolve) => {
      worker.once('exit', resolve);
      worker.kill('SIGKILL');
    });
  }
}

const samples = [];
for (let run = 0; run < runs; run++) {
  const sample = await oneRun(run);
  samples.push(sample);
  process.stderr.write(`${JSON.stringify({ run, ...sample })}\n`);
}
await clientConnection.close();
await stack.close();

const report = {
  bench: 'priority',
  requirement: 'P8',
  backlogPages: BACKLOG,
  lines,
  latencyMs,
  workerSlots: slots,
  runs,
  target: "the person's page submit-to-commit behind the backlog <= 2x the same page idle",
  aloneSecondsMedian: round(median(samples.map((s) => s.aloneSeconds)), 2),
  behindBacklogSecondsMedian: round(median(samples.map((s) => s.behindSeconds)), 2),
  ratioMedian: round(median(samples.map((s) => s.ratio)), 2),
  backlogPagesPerSecondMedian: round(median(samples.map((s) => s.backlogPagesPerSecond)), 1),
  samples: samples.map((s) => ({
    ...s,
    aloneSeconds: round(s.aloneSeconds, 2),
    behindSeconds: round(s.behindSeconds, 2),
    ratio: round(s.ratio, 2),
    backlogSubmitSeconds: round(s.backlogSubmitSeconds, 1),
    backlogPagesPerSecond: round(s.backlogPagesPerSecond, 1),
  })),
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
