import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { segmentsOf } from '../../core/annotation';
import { auditInvariants } from '../../db/audit';
import { getJob } from '../../db/jobs';
import { getPage } from '../../db/pages';
import { createProviderRegistry } from '../../providers/registry';
import { type SimulatedOptions, SimulatedProvider } from '../../providers/simulated';
import type { QuireWorker } from '../../worker/createWorker';
import { CountingProvider } from '../support/countingProvider';
import { createTestQuire, type TestQuire } from '../support/quire';

/**
 * P7: an engine that reads line by line reads the lines in the `segment` activity that found
 * them, for one slice (`QUIRE_RECOGNIZE_SLICE_MS`, the shortest allowed here), and polishes
 * there when it can; `recognize` takes what the slice left. One fenced save per line (T2).
 */
const SLICE_MS = 100;
const counting = new CountingProvider(new SimulatedProvider());
let quire: TestQuire;
let worker: QuireWorker;
let running: Promise<void>;
let ws: number;

beforeAll(async () => {
  quire = await createTestQuire(
    { QUIRE_RECOGNIZE_SLICE_MS: String(SLICE_MS) },
    createProviderRegistry([counting]),
  );
  ws = await quire.workspace();
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

async function run(pageId: number, simulated: SimulatedOptions) {
  const job = await quire.client.startJob({ workspaceId: ws, pageId, options: { simulated } });
  const handle = quire.temporal.workflow.getHandle(job.workflowId);
  const outcome = await handle.result();
  const history = await handle.fetchHistory();
  const scheduled = (history.events ?? []).flatMap((e) =>
    e.activityTaskScheduledEventAttributes
      ? [e.activityTaskScheduledEventAttributes.activityType?.name]
      : [],
  );
  return { job, outcome, scheduled };
}

function linesRead(jobId: string) {
  return counting.calls.filter((c) => c.jobId === jobId && c.op === 'recognize');
}

async function savedLines(jobId: string) {
  const { rows } = await quire.db.pool.query(
    `SELECT seq FROM job_checkpoints WHERE job_id = $1 AND stage = 'recognize' ORDER BY seq`,
    [jobId],
  );
  return rows.map((r) => Number(r.seq));
}

async function chargedLines(jobId: string) {
  const { rows } = await quire.db.pool.query(
    `SELECT count(*)::int AS n FROM provider_calls
      WHERE job_id = $1 AND operation = 'recognize' AND outcome = 'ok'`,
    [jobId],
  );
  return rows[0].n as number;
}

describe('lines read where they are found (P7)', () => {
  it('P7 a fresh page read line by line runs one activity task: segment reads and polishes', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome, scheduled } = await run(pageId, { lines: 5 });
    expect(outcome.status).toBe('completed');
    expect(scheduled).toEqual(['segmentPage']);
    expect(linesRead(job.jobId).map((c) => c.segment)).toEqual([0, 1, 2, 3, 4]);
    // Each line saved on its own, with its charge beside it (T2, B1).
    expect(await savedLines(job.jobId)).toEqual([0, 1, 2, 3, 4]);
    expect(await chargedLines(job.jobId)).toBe(5);
    const page = await getPage(quire.db.pool, ws, pageId);
    const texts = segmentsOf(page!.annotationPage).map((s) => s.text);
    expect(texts).toHaveLength(5);
    expect(texts.every((t) => t.length > 0)).toBe(true);
  });

  it('P7 lines the slice in segment left are read by recognize, each line once', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome, scheduled } = await run(pageId, { lines: 8, latencyMs: 40 });
    expect(outcome.status).toBe('completed');
    expect(scheduled[0]).toBe('segmentPage');
    expect(scheduled).toContain('recognizeSegments');
    const read = linesRead(job.jobId).map((c) => c.segment);
    expect(read).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await savedLines(job.jobId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await chargedLines(job.jobId)).toBe(8);
  });

  it('J2 P7 a line failing in the slice in segment is not tried again in that attempt', async () => {
    const pageId = await quire.page(ws);
    const { job, outcome } = await run(pageId, {
      lines: 6,
      latencyMs: 30,
      faults: [{ op: 'recognize', category: 'timeout', segments: [1] }],
    });
    expect(outcome.status).toBe('completed');
    expect(linesRead(job.jobId).filter((c) => c.segment === 1)).toHaveLength(1);
    const row = await getJob(quire.db.pool, ws, job.jobId);
    expect([row?.completedSegments, row?.failedSegments, row?.totalSegments]).toEqual([5, 1, 6]);
  });
});
