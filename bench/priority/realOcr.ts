/**
 * bench/priority, real OCR (P8): a page a person waits for, uploaded as the console uploads it
 * (`interactive`), on the native tesseract engine over the repository's real scan (the
 * manifesto page), alone and then behind a bulk batch of N copies of the same scan sent
 * through the API, in the same run. Each run: the person's page on the idle installation,
 * then the backlog, then (half a bulk page's read after the backlog's first commit, so that
 * its engine calls fill the worker and are half-way through their pages) the person's page
 * again; its upload-to-commit both times, and their ratio. The rest of the backlog is then canceled (J5) and the installation left to settle
 * before the next run. Target: at most 2x. Medians over the runs; the load average with them,
 * as the ratio of two figures of the same run is what holds on a shared machine.
 * The installation runs on npm start's defaults (engine `auto`, one engine per core, the
 * image derivative schedule running), in dev mode (the default: Temporal dev server, one
 * worker, the upload server running the web's batch routes) or BENCH_MODE=cluster (cluster
 * mode, the console's upload with a session cookie on the web replica): bench/ocr/topologies.ts.
 * Flags: --backlog N (150), --runs N (3). BENCH_REPORT_SUFFIX names the report file
 * (bench/priority/last-run-real-ocr[-cluster][-suffix].json). Prints one JSON object.
 */
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { QuireClient } from '../../client';
import { parseConfig } from '../../core/config';
import { createJobStore } from '../../db/jobStore';
import { MANIFESTO_PAGE, makeTempDir, REPO_ROOT, removeDir } from '../../test/support/fixtures';
import { arg } from '../lib/benchDatabase';
import { timeline } from '../lib/history';
import { median, round } from '../lib/stack';
import { startClusterTopology, startDevTopology, type Topology } from '../ocr/topologies';

const BACKLOG = arg('backlog', 150);
const RUNS = arg('runs', 3);
const MODE = process.env.BENCH_MODE === 'cluster' ? 'cluster' : 'dev';
const suffix = process.env.BENCH_REPORT_SUFFIX ? `-${process.env.BENCH_REPORT_SUFFIX}` : '';
const reportFile = `bench/priority/last-run-real-ocr${MODE === 'cluster' ? '-cluster' : ''}${suffix}.json`;

const scan = await readFile(MANIFESTO_PAGE);
const dir = await makeTempDir('quire-bench-priority-real-');
const loadBefore = os.loadavg();
const topology: Topology =
  MODE === 'cluster' ? await startClusterTopology() : await startDevTopology(dir);
const connection = await Connection.connect({
  address: topology.temporalAddress,
  tls: topology.temporalTls,
});
const temporal = new Client({ connection, namespace: topology.namespace });
// For the backlog's cancel (J5), which needs no more of the configuration than this.
const quire = QuireClient.fromConfig(
  parseConfig({ QUIRE_SECRET_KEY: 'c'.repeat(64), DATABASE_URL: 'postgres://unused' }),
  temporal,
  createJobStore(topology.pool),
);

function formOf(pages: number, name: string): FormData {
  const form = new FormData();
  for (let i = 0; i < pages; i++) {
    form.append('files[]', new Blob([scan], { type: 'image/png' }), `${name}-${i}.png`);
  }
  return form;
}

async function uploaded(response: Response): Promise<{ batchId: string }> {
  if (response.status !== 201)
    throw new Error(`upload failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as { batchId: string };
}

/** The batch's jobs by status, and its one job's id and workflow when it has one page. */
async function batchState(batchId: string) {
  const { rows } = await topology.pool.query(
    `SELECT id, workflow_id, status, extract(epoch FROM ended_at) * 1000 AS ended,
            extract(epoch FROM created_at) * 1000 AS created
       FROM transcription_jobs WHERE batch_id = $1`,
    [batchId],
  );
  const count = (status: string) => rows.filter((r) => r.status === status).length;
  return {
    rows,
    completed: count('completed'),
    active: count('pending') + count('running'),
    failed: count('failed'),
  };
}

async function until(what: string, check: () => Promise<boolean>, limitMs = 900_000) {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The person's page: uploaded from the console, timed from the upload to its commit. */
async function personPage(name: string) {
  const sent = Date.now();
  const { batchId } = await uploaded(await topology.uploadAsPerson(formOf(1, name)));
  let state = await batchState(batchId);
  await until(`the person's page ${name}`, async () => {
    state = await batchState(batchId);
    return state.active === 0;
  });
  const job = state.rows[0];
  if (state.completed !== 1) throw new Error(`the person's page ${name} did not complete`);
  return {
    seconds: (Number(job.ended) - sent) / 1000,
    createdToCommitSeconds: (Number(job.ended) - Number(job.created)) / 1000,
    timelineMs: await timeline(temporal, job.workflow_id),
  };
}

/** Until no job of the workspace is active and no page waits for its derivative (I4). */
async function settled(): Promise<void> {
  await until('the installation to settle', async () => {
    const { rows } = await topology.pool.query(
      `SELECT (SELECT count(*) FROM transcription_jobs
                WHERE workspace_id = $1 AND status IN ('pending', 'running'))::int AS active,
              (SELECT count(*) FROM pages WHERE workspace_id = $1 AND kind = 'image'
                 AND derivative_key IS NULL AND derivative_error IS NULL
                 AND blob_key IS NOT NULL AND deleted_at IS NULL)::int AS underived`,
      [topology.workspaceId],
    );
    return rows[0].active === 0 && rows[0].underived === 0;
  });
  // The last engine processes and commits of canceled work end within this.
  await new Promise((resolve) => setTimeout(resolve, 5_000));
}

async function oneRun(run: number) {
  const load = os.loadavg();
  const alone = await personPage(`alone-${run}`);
  await settled();
  const backlogSent = Date.now();
  const backlog = await uploaded(await topology.upload(formOf(BACKLOG, `bulk-${run}`)));
  const backlogUploadSeconds = (Date.now() - backlogSent) / 1000;
  await until('the backlog to commit its first page', async () => {
    return (await batchState(backlog.batchId)).completed > 0;
  });
  // The backlog's engines start together and, on the same scan, end together: a page sent
  // just after a commit would find a slot about to free. A person arrives at any moment of a
  // bulk page's read, on average half-way through it: the first page's time from the upload's
  // end to its commit is one bulk page, so the person's page goes half of that after it.
  const bulkPageSeconds = (Date.now() - backlogSent) / 1000 - backlogUploadSeconds;
  await new Promise((resolve) => setTimeout(resolve, (bulkPageSeconds * 1000) / 2));
  const before = await batchState(backlog.batchId);
  const behind = await personPage(`behind-${run}`);
  const after = await batchState(backlog.batchId);
  await quire.cancelBatch(topology.workspaceId, backlog.batchId);
  await settled();
  return {
    loadAverage: load.map((l) => round(l, 2)),
    aloneSeconds: alone.seconds,
    behindSeconds: behind.seconds,
    ratio: behind.seconds / alone.seconds,
    aloneCreatedToCommitSeconds: alone.createdToCommitSeconds,
    behindCreatedToCommitSeconds: behind.createdToCommitSeconds,
    backlogUploadSeconds,
    bulkPageSeconds,
    backlogCommittedMeanwhile: after.completed - before.completed,
    backlogActiveWhenPersonDone: after.active,
    aloneTimelineMs: alone.timelineMs,
    behindTimelineMs: behind.timelineMs,
  };
}

const samples: Array<Awaited<ReturnType<typeof oneRun>>> = [];
try {
  // A first page warms the worker, the engine and the upload route; it is not measured.
  await personPage('warm');
  await settled();
  for (let run = 0; run < RUNS; run++) {
    const sample = await oneRun(run);
    samples.push(sample);
    process.stderr.write(
      `${JSON.stringify({ run, alone: sample.aloneSeconds, behind: sample.behindSeconds, ratio: sample.ratio, load: sample.loadAverage })}\n`,
    );
  }
} finally {
  await connection.close();
  await topology.close();
  await removeDir(dir);
}

const report = {
  bench: 'priority-real-ocr',
  requirement: 'P8',
  mode: MODE,
  fixture: path.basename(MANIFESTO_PAGE),
  backlogPages: BACKLOG,
  runs: RUNS,
  machine: {
    cores: os.availableParallelism(),
    loadAverageBefore: loadBefore,
    loadAverageAfter: os.loadavg(),
  },
  target: "the person's page, upload to commit, behind the backlog <= 2x the same page alone",
  aloneSecondsMedian: round(median(samples.map((s) => s.aloneSeconds)), 2),
  behindBacklogSecondsMedian: round(median(samples.map((s) => s.behindSeconds)), 2),
  ratioMedian: round(median(samples.map((s) => s.ratio)), 2),
  samples: samples.map((s) => ({
    ...s,
    aloneSeconds: round(s.aloneSeconds, 2),
    behindSeconds: round(s.behindSeconds, 2),
    ratio: round(s.ratio, 2),
    aloneCreatedToCommitSeconds: round(s.aloneCreatedToCommitSeconds, 2),
    behindCreatedToCommitSeconds: round(s.behindCreatedToCommitSeconds, 2),
    backlogUploadSeconds: round(s.backlogUploadSeconds, 1),
    bulkPageSeconds: round(s.bulkPageSeconds, 2),
  })),
};
const text = `${JSON.stringify(report, null, 2)}\n`;
process.stdout.write(text);
await writeFile(path.join(REPO_ROOT, reportFile), text);
process.exit(0);
