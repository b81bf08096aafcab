import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { segmentsOf } from '../../core/annotation';
import { auditInvariants } from '../../db/audit';
import { getJob, listAttempts } from '../../db/jobs';
import { getPage } from '../../db/pages';
import { createProviderRegistry } from '../../providers/registry';
import { type SimulatedOptions, SimulatedProvider } from '../../providers/simulated';
import { createQuireClient, type QuireWorker } from '../../worker/createWorker';
import { CHECKPOINT_LOG, logCheckpointWrites } from '../support/checkpointLog';
import { CountingProvider } from '../support/countingProvider';
import { createTestQuire, type TestQuire } from '../support/quire';

/**
 * P1: an engine that reads whole pages reads a fresh page once; its lines are saved with the
 * segment checkpoint in one transaction; pages whose boxes exist are read line by line.
 * P7: an engine that reads line by line reads the lines in the `segment` activity that found
 * them, for one slice, and polishes there when it can; `recognize` takes what the slice left.
 * One fenced save per line either way (T2).
 */
const counting = new CountingProvider(new SimulatedProvider());
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire({}, createProviderRegistry([counting]));
  ws = await quire.workspace();
  await logCheckpointWrites(quire.db.pool);
  worker = await quire.newWorker();
  running = worker.run();
});

afterEach(async () => {
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await quire?.close();
});

async function run(pageId: number, simulated: SimulatedOptions, client = quire.client) {
  const job = await client.startJob({ workspaceId: ws, pageId, options: { simulated } });
  const outcome = await quire.temporal.workflow.getHandle(job.workflowId).result();
  return { job, outcome };
}

/** The activity types a job's history scheduled, in order. */
async function scheduledOf(workflowId: string) {
  const history = await quire.temporal.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((e) =>
    e.activityTaskScheduledEventAttributes
      ? [e.activityTaskScheduledEventAttributes.activityType?.name]
      : [],
  );
}

/** Local activities a job's history recorded, as markers (patch markers aside). */
async function localActivitiesOf(workflowId: string) {
  const history = await quire.temporal.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter(
    (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
  ).length;
}

function callsOf(jobId: string, op: string) {
  return counting.calls.filter((c) => c.jobId === jobId && c.op === op);
}

async function pageTexts(pageId: number) {
  const page = await getPage(quire.db.pool, ws, pageId);
  return segmentsOf(page!.annotationPage).map((s) => s.text);
}

async function checkpointRows(jobId: string) {
  const { rows } = await quire.db.pool.query(
    `SELECT stage, seq, attempt_number, created_at FROM ${CHECKPOINT_LOG} WHERE job_id = $1 ORDER BY stage, seq`,
    [jobId],
  );
  return rows as Array<{ stage: string; seq: number; attempt_number: number; created_at: Date }>;
}

describe('read once (P1)', () => {
  it('P1 a fresh page is read in one engine pass: one page call, no segment or line calls', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(pageId, { lines: 6, readPages: true });
    expect(outcome.status).toBe('completed');
    expect(callsOf(job.jobId, 'read')).toHaveLength(1);
    expect(callsOf(job.jobId, 'segment')).toHaveLength(0);
    expect(callsOf(job.jobId, 'recognize')).toHaveLength(0);
    const texts = await pageTexts(pageId);
    expect(texts).toHaveLength(6);
    expect(texts[0]).toMatch(/^Line 1 .*\.$/);
    const rows = await checkpointRows(job.jobId);
    const lines = rows.filter((r) => r.stage !== 'polish');
    expect(lines.map((r) => `${r.stage}${r.seq}`)).toEqual([
      'recognize0',
      'recognize1',
      'recognize2',
      'recognize3',
      'recognize4',
      'recognize5',
      'segment0',
    ]);
    // One transaction: every row carries its transaction's start time.
    expect(new Set(lines.map((r) => r.created_at.getTime())).size).toBe(1);
    const row = await getJob(quire.db.pool, ws, job.jobId);
    expect([row?.completedSegments, row?.failedSegments, row?.totalSegments]).toEqual([6, 0, 6]);
  });

  it('P6 a fresh page is read and committed in its one activity task: the claim is the only local activity', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(pageId, { lines: 4, readPages: true });
    expect(outcome).toMatchObject({ status: 'completed', resultRevision: 1 });
    expect(await scheduledOf(job.workflowId)).toEqual(['segmentPage']);
    expect(await localActivitiesOf(job.workflowId)).toBe(1);
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts.map((a) => [a.outcome, a.resultRevision])).toEqual([['completed', 1]]);
    const page = await getPage(quire.db.pool, ws, pageId);
    expect(page?.revision).toBe(1);
  });

  it('P6 a fresh page is read, polished and committed in one transaction', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(pageId, { lines: 5, readPages: true });
    expect(outcome).toMatchObject({ status: 'completed', resultRevision: 1 });
    expect(callsOf(job.jobId, 'polish')).toHaveLength(1);
    // now() is the transaction's start: every row one transaction writes carries the same.
    const { rows } = await quire.db.pool.query(
      `SELECT 'checkpoint ' || stage AS row, created_at AS at FROM ${CHECKPOINT_LOG} WHERE job_id = $1
       UNION ALL SELECT 'call ' || operation, occurred_at FROM provider_calls WHERE job_id = $1
       UNION ALL SELECT 'revision', created_at FROM page_revisions WHERE job_id = $1
       UNION ALL SELECT 'attempt', ended_at FROM transcription_job_attempts WHERE job_id = $1
       UNION ALL SELECT 'job', ended_at FROM transcription_jobs WHERE id = $1`,
      [job.jobId],
    );
    expect(new Set(rows.map((r) => r.row))).toEqual(
      new Set([
        'checkpoint segment',
        'checkpoint recognize',
        'checkpoint polish',
        'call read',
        'call polish',
        'revision',
        'attempt',
        'job',
      ]),
    );
    const at = rows[0].at.getTime();
    expect(rows.filter((r) => r.at.getTime() !== at)).toEqual([]);
    const texts = await pageTexts(pageId);
    // J3: the polished text is what was committed (the simulated polish capitalises it).
    expect(texts[0]).toMatch(/^Line 1 .*\.$/);
  });

  it("P6 a commit refused in the read's transaction keeps the read and the polish; the commit step then commits", async () => {
    const pageId = await quire.page(ws);
    const db = quire.db.pool;
    await db.query('CREATE SEQUENCE p6_refusals');
    await db.query(
      `CREATE FUNCTION p6_refuse_once() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.page_id = ${Number(pageId)} AND nextval('p6_refusals') = 1 THEN
           RAISE EXCEPTION 'page revision refused once';
         END IF;
         RETURN NEW;
       END $$`,
    );
    await db.query(
      'CREATE TRIGGER p6_refuse_once BEFORE INSERT ON page_revisions FOR EACH ROW EXECUTE FUNCTION p6_refuse_once()',
    );
    try {
      const { job, outcome } = await run(pageId, { lines: 4, readPages: true });
      expect(outcome).toMatchObject({ status: 'completed', resultRevision: 1 });
      // Read and polished once, in the one attempt: nothing paid for was undone.
      expect(callsOf(job.jobId, 'read')).toHaveLength(1);
      expect(callsOf(job.jobId, 'polish')).toHaveLength(1);
      const attempts = await listAttempts(db, job.jobId);
      expect(attempts.map((a) => [a.outcome, a.resultRevision])).toEqual([['completed', 1]]);
      // The read and its polish in one transaction, the revision in the commit step's own.
      const { rows } = await db.query(
        `SELECT (SELECT created_at FROM ${CHECKPOINT_LOG} WHERE job_id = $1 AND stage = 'polish') AS polish,
                (SELECT created_at FROM ${CHECKPOINT_LOG} WHERE job_id = $1 AND stage = 'segment') AS segment,
                (SELECT created_at FROM page_revisions WHERE job_id = $1) AS revision`,
        [job.jobId],
      );
      expect(rows[0].polish.getTime()).toBe(rows[0].segment.getTime());
      expect(rows[0].revision.getTime()).toBeGreaterThan(rows[0].segment.getTime());
      expect((await pageTexts(pageId))[0]).toMatch(/^Line 1 .*\.$/);
      const { rows: refused } = await db.query('SELECT last_value::int AS n FROM p6_refusals');
      expect(refused[0].n).toBe(2);
    } finally {
      await db.query('DROP TRIGGER p6_refuse_once ON page_revisions');
      await db.query('DROP FUNCTION p6_refuse_once()');
      await db.query('DROP SEQUENCE p6_refusals');
    }
  });

  it('P6 J3 a polish refused in the read is recorded with the read; the polish stage degrades and commits', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(pageId, {
      lines: 3,
      readPages: true,
      faults: [{ op: 'polish', category: 'timeout' }],
    });
    expect(outcome.status).toBe('completed');
    expect(await scheduledOf(job.workflowId)).toEqual(['segmentPage', 'polishSegments']);
    const { rows } = await quire.db.pool.query(
      `SELECT operation, outcome, occurred_at FROM provider_calls WHERE job_id = $1 ORDER BY id`,
      [job.jobId],
    );
    expect(rows.map((r) => `${r.operation} ${r.outcome}`)).toEqual([
      'read ok',
      'polish timeout',
      'polish timeout',
    ]);
    // The first refusal was recorded in the read's own transaction.
    expect(rows[1].occurred_at.getTime()).toBe(rows[0].occurred_at.getTime());
    // The raw text is committed (J3), the page read once.
    expect((await pageTexts(pageId))[0]).toMatch(/^line 1 [a-z ]+$/);
    expect(callsOf(job.jobId, 'read')).toHaveLength(1);
  });

  it('P1 a re-run on the existing boxes reads line by line, no page call', async () => {
    const pageId = await quire.page(ws);
    await run(pageId, { lines: 5, readPages: true });
    const { job, outcome } = await run(pageId, { lines: 5, readPages: true, seed: 'second' });
    expect(outcome.status).toBe('completed');
    expect(callsOf(job.jobId, 'read')).toHaveLength(0);
    expect(callsOf(job.jobId, 'segment')).toHaveLength(0);
    expect(callsOf(job.jobId, 'recognize').map((c) => c.segment)).toEqual([0, 1, 2, 3, 4]);
  });

  it('J2 lines a one-pass read returns empty are failed lines; the others commit', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(pageId, {
      lines: 5,
      readPages: true,
      faults: [{ op: 'recognize', category: 'timeout', segments: [1, 3] }],
    });
    expect(outcome.status).toBe('completed');
    const row = await getJob(quire.db.pool, ws, job.jobId);
    expect([row?.completedSegments, row?.failedSegments, row?.totalSegments]).toEqual([3, 2, 5]);
    const texts = await pageTexts(pageId);
    expect(texts).toHaveLength(5);
    expect([texts[1], texts[3]]).toEqual(['', '']);
    expect(texts[0]).toMatch(/^Line 1 /);
    expect(callsOf(job.jobId, 'recognize')).toHaveLength(0);
  });

  it('T2 P1 a pass cut off by a pause saves no line; the next attempt reads the page again, once', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(pageId, {
      lines: 4,
      readPages: true,
      faults: [{ op: 'read', category: 'outage', attempts: [1], retryAfterMs: 100 }],
    });
    expect(outcome.status).toBe('completed');
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts.map((a) => [a.outcome, a.refunded])).toEqual([
      ['retryable_failed', true],
      ['completed', false],
    ]);
    expect(callsOf(job.jobId, 'read').map((c) => c.attempt)).toEqual([1, 2]);
    // All or none: nothing of attempt 1 was saved.
    const rows = await checkpointRows(job.jobId);
    expect(rows.every((r) => r.attempt_number === 2)).toBe(true);
    expect(rows.filter((r) => r.stage === 'recognize')).toHaveLength(4);
  });

  it('J3 P1 a page whose every line comes back empty fails without committing', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(pageId, {
      lines: 3,
      readPages: true,
      faults: [{ op: 'recognize', category: 'timeout' }],
    });
    expect(outcome.status).toBe('failed');
    expect(outcome.errorCategory).toBe('content');
    const page = await getPage(quire.db.pool, ws, pageId);
    expect(page?.revision).toBe(0);
    expect(callsOf(job.jobId, 'read')).toHaveLength(1);
  });
});

async function savedLines(jobId: string) {
  const rows = await checkpointRows(jobId);
  return rows.filter((r) => r.stage === 'recognize').map((r) => r.seq);
}

async function chargedLines(jobId: string) {
  const { rows } = await quire.db.pool.query(
    `SELECT count(*)::int AS n FROM provider_calls
      WHERE job_id = $1 AND operation = 'recognize' AND outcome = 'ok'`,
    [jobId],
  );
  return rows[0].n as number;
}

/** A client whose jobs read for the shortest slice allowed: `segment` leaves lines to `recognize`. */
function sliced() {
  const config = { ...quire.config, QUIRE_RECOGNIZE_SLICE_MS: 100 };
  return createQuireClient(config, quire.temporal, quire.db.pool, quire.providers.names());
}

describe('lines read where they are found (P7)', () => {
  it('P7 a fresh page read line by line runs one activity task: segment reads and polishes', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(pageId, { lines: 5 });
    const scheduled = await scheduledOf(job.workflowId);
    expect(outcome).toMatchObject({ status: 'completed', resultRevision: 1 });
    expect(scheduled).toEqual(['segmentPage']);
    // P6: committed there too; the claim is the one local activity.
    expect(await localActivitiesOf(job.workflowId)).toBe(1);
    expect(callsOf(job.jobId, 'recognize').map((c) => c.segment)).toEqual([0, 1, 2, 3, 4]);
    // Each line saved on its own, with its charge beside it (T2, B1).
    expect(await savedLines(job.jobId)).toEqual([0, 1, 2, 3, 4]);
    expect(await chargedLines(job.jobId)).toBe(5);
    const texts = await pageTexts(pageId);
    expect(texts).toHaveLength(5);
    expect(texts.every((t) => t.length > 0)).toBe(true);
  });

  it('P7 lines the slice in segment left are read by recognize, each line once', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(pageId, { lines: 8, latencyMs: 40 }, sliced());
    const scheduled = await scheduledOf(job.workflowId);
    expect(outcome.status).toBe('completed');
    expect(scheduled[0]).toBe('segmentPage');
    expect(scheduled).toContain('recognizeSegments');
    const read = callsOf(job.jobId, 'recognize').map((c) => c.segment);
    expect(read).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await savedLines(job.jobId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await chargedLines(job.jobId)).toBe(8);
    // P6: the last slice committed in its own activity.
    expect(outcome.resultRevision).toBe(1);
    expect(await localActivitiesOf(job.workflowId)).toBe(1);
  });

  it('J2 P7 a line failing in the slice in segment is not tried again in that attempt', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(
      pageId,
      {
        lines: 6,
        latencyMs: 30,
        faults: [{ op: 'recognize', category: 'timeout', segments: [1] }],
      },
      sliced(),
    );
    expect(outcome.status).toBe('completed');
    expect(callsOf(job.jobId, 'recognize').filter((c) => c.segment === 1)).toHaveLength(1);
    const row = await getJob(quire.db.pool, ws, job.jobId);
    expect([row?.completedSegments, row?.failedSegments, row?.totalSegments]).toEqual([5, 1, 6]);
  });
});
