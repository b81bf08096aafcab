import { Client, Connection } from '@temporalio/client';
import { QuireClient } from '../../client';
import { parseConfig } from '../../core/config';
import { createJobStore } from '../../db/jobStore';
import { medianTaskTimes, taskTimes, timeline } from '../lib/history';
import { benchPages, benchWorkspace, spawnSimulatedWorker } from '../lib/simulatedFleet';
import { median, percentile, round, startBenchStack } from '../lib/stack';

/**
 * bench/fairness (M5): workspace A queues FLOOD simulated pages, then workspace B submits
 * SMALL. B's p95 submit-to-commit is compared with B alone on the same stack, in the same run
 * (B's pages first, with nothing else queued). Target: the ratio at most 2. Each run has its
 * own task queue and worker process; A's leftover backlog is left behind with its queue.
 * Env: BENCH_FLOOD (2000), BENCH_SMALL (20), BENCH_LINES (4), BENCH_LATENCY_MS (50),
 * BENCH_SLOTS (8), BENCH_RUNS (3). Prints one JSON object.
 */
const FLOOD = Number(process.env.BENCH_FLOOD ?? 2000);
const SMALL = Number(process.env.BENCH_SMALL ?? 20);
const lines = Number(process.env.BENCH_LINES ?? 4);
const latencyMs = Number(process.env.BENCH_LATENCY_MS ?? 50);
const slots = Number(process.env.BENCH_SLOTS ?? 8);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const SECRET = 'f'.repeat(64);

const stack = await startBenchStack(20);
const clientConnection = await Connection.connect({ address: stack.temporalAddress });
const temporal = new Client({ connection: clientConnection });

/** Starts jobs for the pages, a few at a time, in page order. */
async function submit(client: QuireClient, workspaceId: number, pageIds: number[]) {
  const jobs: Array<{ jobId: string; workflowId: string }> = [];
  const width = 16;
  for (let i = 0; i < pageIds.length; i += width) {
    const started = await Promise.all(
      pageIds
        .slice(i, i + width)
        .map((pageId) =>
          client.startJob({ workspaceId, pageId, options: { simulated: { lines, latencyMs } } }),
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

async function floodCounts(
  workspaceId: number,
): Promise<{ done: number; waiting: number; running: number }> {
  const { rows } = await stack.pool.query(
    `SELECT count(*) FILTER (WHERE status = 'completed')::int AS done,
            count(*) FILTER (WHERE status IN ('pending', 'running'))::int AS waiting,
            count(*) FILTER (WHERE status = 'running')::int AS running
       FROM transcription_jobs WHERE workspace_id = $1`,
    [workspaceId],
  );
  return { done: rows[0].done, waiting: rows[0].waiting, running: rows[0].running };
}

async function oneRun(run: number) {
  const taskQueue = `bench-fairness-${run}`;
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
    const A = await benchWorkspace(stack.pool, `flooding-${run}`);
    const B = await benchWorkspace(stack.pool, `small-${run}`);

    // B alone: nothing else queued.
    const alone = await submit(client, B, await benchPages(stack, B, SMALL));
    await Promise.all(alone.map((j) => temporal.workflow.getHandle(j.workflowId).result()));
    const aloneSeconds = await submitToCommit(alone.map((j) => j.jobId));

    // A floods the queue; B then submits the same again.
    const floodPages = await benchPages(stack, A, FLOOD);
    const floodStart = Date.now();
    await submit(client, A, floodPages);
    const floodSubmitSeconds = (Date.now() - floodStart) / 1000;
    const bPages = await benchPages(stack, B, SMALL);
    const floodDoneWhenBSubmitted = await floodCounts(A);
    const behind = await submit(client, B, bPages);
    await Promise.all(behind.map((j) => temporal.workflow.getHandle(j.workflowId).result()));
    const behindSeconds = await submitToCommit(behind.map((j) => j.jobId));
    const whenBDone = await floodCounts(A);
    const times = (jobs: Array<{ workflowId: string }>) =>
      Promise.all(jobs.map(async (j) => taskTimes(await timeline(temporal, j.workflowId))));
    const p95Alone = percentile(aloneSeconds, 95);
    const p95Behind = percentile(behindSeconds, 95);
    return {
      p95Alone,
      p95Behind,
      ratio: p95Behind / p95Alone,
      floodSubmitSeconds,
      floodCommittedWhenBDone: whenBDone.done,
      floodWaitingWhenBDone: whenBDone.waiting,
      // How many of A's pages committed between B's submit and B's last commit: how much of
      // the worker B's pages had to share (fairness gives them at least half).
      floodCommittedDuringB: whenBDone.done - floodDoneWhenBSubmitted.done,
      // A's pages claimed and not yet committed as B came and as it finished: the pages
      // whose later tasks B's had to queue beside.
      floodRunningWhenBSubmitted: floodDoneWhenBSubmitted.running,
      floodRunningWhenBDone: whenBDone.running,
      bWindowSeconds: Math.max(...behindSeconds),
      // Where B's pages waited: the median page's queue waits and worker runs, alone and
      // behind the flood, from their histories.
      bAloneTaskTimesMs: medianTaskTimes(await times(alone)),
      bBehindTaskTimesMs: medianTaskTimes(await times(behind)),
    };
  } finally {
    // A's backlog stays on this run's queue, which no worker polls again.
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
  // Progress, one line per run: a long bench shows its figures before it ends.
  process.stderr.write(`${JSON.stringify({ run, ...sample })}\n`);
}
await clientConnection.close();
await stack.close();

const report = {
  bench: 'fairness',
  requirement: 'M5',
  floodPages: FLOOD,
  smallPages: SMALL,
  lines,
  latencyMs,
  workerSlots: slots,
  runs,
  target: "B's p95 submit-to-commit behind A's flood <= 2x B alone",
  bAloneP95SecondsMedian: round(median(samples.map((s) => s.p95Alone)), 2),
  bBehindFloodP95SecondsMedian: round(median(samples.map((s) => s.p95Behind)), 2),
  ratioMedian: round(median(samples.map((s) => s.ratio)), 2),
  samples: samples.map((s) => ({
    bAloneP95Seconds: round(s.p95Alone, 2),
    bBehindFloodP95Seconds: round(s.p95Behind, 2),
    ratio: round(s.ratio, 2),
    floodSubmitSeconds: round(s.floodSubmitSeconds, 1),
    floodCommittedWhenBDone: s.floodCommittedWhenBDone,
    floodWaitingWhenBDone: s.floodWaitingWhenBDone,
    floodCommittedDuringB: s.floodCommittedDuringB,
    floodRunningWhenBSubmitted: s.floodRunningWhenBSubmitted,
    floodRunningWhenBDone: s.floodRunningWhenBDone,
    bWindowSeconds: round(s.bWindowSeconds, 2),
    bAloneTaskTimesMs: s.bAloneTaskTimesMs,
    bBehindTaskTimesMs: s.bBehindTaskTimesMs,
  })),
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
