import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBlobStore } from '../../blobs/fromConfig';
import type { Pool } from '../../db/pool';
import { createQuireClient } from '../../worker/createWorker';
import { storedImagePage } from '../support/blobReferences';
import { startTestCluster, type TestCluster } from '../support/cluster';
import { frakturLines, imageDimensions } from '../support/fixtures';
import { eventually } from '../support/wait';

/**
 * D7 outage drills on the production topology (D2): three workers, two web replicas, the
 * Temporal server on the cluster's PostgreSQL, the object server, real OCR (tesseract on the
 * 20 real Fraktur line scans). PostgreSQL (Quire's and the Temporal server's own) is stopped for
 * a managed database's failover, 120 s, and frozen by SIGSTOP for 60 s (every PostgreSQL process
 * stopped: connections stay open and nothing answers, as on a stalled host), and the object
 * store for 60 s (killed, and frozen by SIGSTOP: a store that accepts connections and answers
 * nothing), mid-batch; the verdict is D3's (each job committed once, the auditor clean,
 * deliveries done) and D7's: no attempt charged, each page's read paid for once. The heartbeat timeout is the default a deployment
 * runs with (15 s), not the drills' 3 s: with 3 s, the seconds a Temporal server takes to come
 * back from its own database's outage are themselves longer than a heartbeat timeout.
 * The Temporal server is restarted with a 20 s gap. Shorter outages with
 * QUIRE_DRILL_PG_OUTAGE_MS / QUIRE_DRILL_D7_PG_FREEZE_MS / QUIRE_DRILL_D7_STORE_OUTAGE_MS /
 * QUIRE_DRILL_D7_TEMPORAL_OUTAGE_MS.
 */
const PG_OUTAGE_MS = Number(process.env.QUIRE_DRILL_PG_OUTAGE_MS ?? 120_000);
const D7_STORE_OUTAGE_MS = Number(process.env.QUIRE_DRILL_D7_STORE_OUTAGE_MS ?? 60_000);
const D7_PG_FREEZE_MS = Number(process.env.QUIRE_DRILL_D7_PG_FREEZE_MS ?? 60_000);
/** A Temporal server restart: its services stopped, then started on the same history. */
const D7_TEMPORAL_OUTAGE_MS = Number(process.env.QUIRE_DRILL_D7_TEMPORAL_OUTAGE_MS ?? 20_000);
let t: TestCluster;

beforeAll(async () => {
  t = await startTestCluster({ env: { QUIRE_HEARTBEAT_TIMEOUT_MS: '15000' } });
}, 900_000);
afterAll(async () => {
  await t?.close();
});

/** Seconds from `faultAt` until a job of the batch commits (D3 recovery, reported). */
async function recoverySeconds(pool: Pool, jobIds: string[], faultAt: Date): Promise<number> {
  await eventually(
    async () => {
      const { rows } = await pool.query(
        `SELECT 1 FROM transcription_jobs WHERE id = ANY($1) AND status = 'completed' AND ended_at > $2 LIMIT 1`,
        [jobIds, faultAt],
      );
      return rows.length > 0 ? true : undefined;
    },
    180_000,
    100,
  );
  return (Date.now() - faultAt.getTime()) / 1000;
}

/** D7: the real Fraktur line scans as stored pages, one real-OCR job each (tesseract). */
async function realOcrBatch(t: TestCluster, workspaceId: number): Promise<string[]> {
  const store = createBlobStore(t.config);
  const client = createQuireClient(t.config, t.temporal, t.pool, ['simulated', 'tesseract']);
  const jobIds: string[] = [];
  for (const line of await frakturLines()) {
    const { width, height } = await imageDimensions(line.image);
    const bytes = await readFile(line.image);
    const pageId = await storedImagePage(t.pool, store, workspaceId, {
      bytes,
      mediaType: 'image/tiff',
      width,
      height,
    });
    const job = await client.startJob({ workspaceId, pageId, provider: 'tesseract' });
    jobIds.push(job.jobId);
  }
  return jobIds;
}

let faultAtIso = '';
const faultAtOf = () => faultAtIso;

/** D7's verdict beside D3's: no attempt charged, each page's read paid for (saved) once. */
async function nothingChargedReadOnce(t: TestCluster, jobIds: string[]): Promise<void> {
  const charged = await t.pool.query(
    `SELECT job_id, attempt_number, outcome, error_category FROM transcription_job_attempts
      WHERE job_id = ANY($1) AND outcome <> 'completed' AND NOT refunded`,
    [jobIds],
  );
  // What the workflow heard of each charged attempt, printed for the drill's reader.
  for (const row of charged.rows) {
    const history = await t.temporal.workflow
      .getHandle(`transcription-job-${row.job_id}`)
      .fetchHistory();
    const failures = (history.events ?? []).map((e) => {
      const failure =
        e.activityTaskFailedEventAttributes?.failure ??
        e.activityTaskTimedOutEventAttributes?.failure;
      const beat = failure?.timeoutFailureInfo?.lastHeartbeatDetails?.payloads?.[0]?.data;
      const at = e.eventTime?.seconds ? Number(e.eventTime.seconds) * 1000 : 0;
      return [
        e.eventId,
        e.eventType,
        new Date(at).toISOString(),
        failure?.message ?? '',
        beat ? Buffer.from(beat).toString() : '',
      ].join(' ');
    });
    process.stdout.write(`${JSON.stringify({ charged: row, faultAt: faultAtOf(), failures })}\n`);
  }
  expect(charged.rows).toEqual([]);
  const reads = await t.pool.query(
    `SELECT j.id, count(c.*)::int AS n FROM transcription_jobs j
       LEFT JOIN provider_calls c ON c.job_id = j.id AND c.operation = 'read'
      WHERE j.id = ANY($1) GROUP BY j.id HAVING count(c.*) <> 1`,
    [jobIds],
  );
  expect(reads.rows).toEqual([]);
}

/** A signal to a program's whole process group, not waiting for it to exit (SIGSTOP, SIGCONT). */
function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) throw new Error('the program is not running');
  process.kill(-pid, signal);
}

function report(drill: string, figures: Record<string, number>): void {
  process.stdout.write(`${JSON.stringify({ drill, ...figures })}\n`);
}

/**
 * One drill: a real-OCR batch, the fault once the batch reaches `when` (an attempt reading a
 * page, or a first job committed), the dependency back after `outageMs`; then D3's and D7's
 * verdicts, and (unless said otherwise) every worker still running.
 */
async function outageDrill(drill: {
  name: string;
  when: 'reading' | 'committed';
  outageMs: number;
  stop: () => Promise<void> | void;
  start: () => Promise<void> | void;
  /** Every worker is still running afterwards (the drills of D3's topology say so). */
  workersStay?: boolean;
}): Promise<void> {
  const { workspaceId } = await t.workspace();
  const jobIds = await realOcrBatch(t, workspaceId);
  // Mid-batch (recoverySeconds below proves the outage met some of the batch's work).
  const reached =
    drill.when === 'reading'
      ? `SELECT 1 FROM transcription_job_attempts WHERE job_id = ANY($1) AND outcome = 'running' LIMIT 1`
      : `SELECT 1 FROM transcription_jobs WHERE id = ANY($1) AND status = 'completed' LIMIT 1`;
  await eventually(
    async () => ((await t.pool.query(reached, [jobIds])).rows.length > 0 ? true : undefined),
    180_000,
    100,
  );
  const faultAt = new Date();
  faultAtIso = faultAt.toISOString();
  await drill.stop();
  await new Promise((resolve) => setTimeout(resolve, drill.outageMs));
  await drill.start();
  const recovered = await recoverySeconds(t.pool, jobIds, faultAt);
  await t.untilCompleted(workspaceId, jobIds, 300_000);
  report(drill.name, { recoverySeconds: recovered, outageMs: drill.outageMs, jobs: jobIds.length });
  await t.verify(workspaceId, jobIds);
  await nothingChargedReadOnce(t, jobIds);
  if (drill.workersStay !== false) {
    for (const worker of t.cluster.workers) expect(worker.running()).toBe(true);
  }
}

describe('outages of Quire infrastructure on the production topology (D7)', () => {
  it('D7 PostgreSQL stopped for 120 s during a real-OCR batch: no attempt charged, no page read twice, every job completes once', async () => {
    await outageDrill({
      name: 'postgres-outage-real-ocr',
      when: 'reading',
      outageMs: PG_OUTAGE_MS,
      stop: () => t.cluster.postgres.stop('immediate'),
      start: () => t.cluster.postgres.start(),
    });
  }, 900_000);

  it('D7 PostgreSQL frozen (SIGSTOP of every PostgreSQL process: connections open, nothing answered) for 60 s during a real-OCR batch: no attempt charged, no page read twice, every job completes once', async () => {
    // Quire's database and the Temporal server's own freeze together, as on a host that stalls.
    await outageDrill({
      name: 'postgres-frozen-real-ocr',
      when: 'reading',
      outageMs: D7_PG_FREEZE_MS,
      stop: () => signalGroup(t.cluster.postgres.pid(), 'SIGSTOP'),
      start: () => signalGroup(t.cluster.postgres.pid(), 'SIGCONT'),
    });
  }, 900_000);

  it('D7 the object store stopped for 60 s during a real-OCR batch: no attempt charged, no page read twice, every job completes once', async () => {
    await outageDrill({
      name: 'object-store-outage-real-ocr',
      when: 'committed',
      outageMs: D7_STORE_OUTAGE_MS,
      stop: () => t.cluster.objectServer.kill('SIGKILL'),
      start: () => t.cluster.objectServer.start(),
      workersStay: false,
    });
  }, 600_000);

  it('D7 the object store frozen (SIGSTOP: connections accepted, nothing answered) for 60 s during a real-OCR batch: no attempt charged, no page read twice, every job completes once', async () => {
    await outageDrill({
      name: 'object-store-frozen-real-ocr',
      when: 'committed',
      outageMs: D7_STORE_OUTAGE_MS,
      stop: () => signalGroup(t.cluster.objectServer.pid(), 'SIGSTOP'),
      start: () => signalGroup(t.cluster.objectServer.pid(), 'SIGCONT'),
    });
  }, 600_000);

  it('D7 the Temporal server restarted during a real-OCR batch: no attempt charged, no page read twice, every job completes once', async () => {
    await outageDrill({
      name: 'temporal-restart-real-ocr',
      when: 'reading',
      outageMs: D7_TEMPORAL_OUTAGE_MS,
      stop: () => t.cluster.temporal.stop(30_000),
      start: () => t.cluster.temporal.start(),
    });
  }, 600_000);
});
