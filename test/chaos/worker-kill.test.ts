import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditInvariants } from '../../db/audit';
import { listAttempts } from '../../db/jobs';
import { CHECKPOINT_LOG, logCheckpointWrites } from '../support/checkpointLog';
import { createTestQuire, type TestQuire, untilSegments, untilStatus } from '../support/quire';
import {
  readCallLog,
  spawnWorker,
  type WorkerProcess,
  waitHealthy,
} from '../support/workerProcess';

let quire: TestQuire;
let ws: number;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  quire = await createTestQuire({ QUIRE_HEARTBEAT_TIMEOUT_MS: '3000' });
  ws = await quire.workspace();
  await logCheckpointWrites(quire.db.pool);
});
afterAll(async () => {
  for (const w of workers) w.child.kill('SIGKILL');
  await quire?.close();
});

describe('worker processes die and drain (T3)', () => {
  it('T3 a worker SIGKILLed mid-recognition: another worker finishes from the checkpoint, one revision', async () => {
    const callLog = join(tmpdir(), `quire-calls-${process.pid}-kill.log`);
    rmSync(callLog, { force: true });
    const a = spawnWorker(quire, 'a', { QUIRE_SIMULATED_CALL_LOG: callLog });
    workers.push(a);
    await waitHealthy(a);
    const pageId = await quire.page(ws);
    const job = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 30, latencyMs: 100 } },
    });
    await untilSegments(quire, ws, job.jobId, 8);
    a.child.kill('SIGKILL');
    const killedAt = Date.now();
    await a.exited;
    const b = spawnWorker(quire, 'b', { QUIRE_SIMULATED_CALL_LOG: callLog });
    workers.push(b);
    const done = await untilStatus(quire, ws, job.jobId, 'completed');
    const recoverySeconds = (Date.now() - killedAt) / 1000;
    expect(recoverySeconds).toBeLessThan(60);
    expect([
      done.completedSegments,
      done.failedSegments,
      done.totalSegments,
      done.resultRevision,
    ]).toEqual([30, 0, 30, 1]);
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts.map((x) => [x.outcome, x.errorCategory])).toEqual([
      ['lease_expired', 'crashed'],
      ['completed', null],
    ]);
    const revisions = await quire.db.pool.query(
      'SELECT revision FROM page_revisions WHERE page_id = $1 AND source = $2',
      [pageId, 'engine'],
    );
    expect(revisions.rows).toEqual([{ revision: 1 }]);
    // No line recognized twice, except the one in flight when the worker died.
    const counts = new Map<number, number>();
    for (const call of readCallLog(callLog).filter(
      (c) => c.op === 'recognize' && c.jobId === job.jobId,
    )) {
      counts.set(call.segment, (counts.get(call.segment) ?? 0) + 1);
    }
    expect(counts.size).toBe(30);
    const twice = [...counts.values()].filter((n) => n > 1);
    expect(twice.length).toBeLessThanOrEqual(1);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
    b.child.kill('SIGTERM');
    await b.exited;
  });

  it('T3 P1 a worker SIGKILLed mid one-pass read: the next worker reads the page again, all lines or none', async () => {
    const callLog = join(tmpdir(), `quire-calls-${process.pid}-kill-read.log`);
    rmSync(callLog, { force: true });
    const a = spawnWorker(quire, 'read-a', { QUIRE_SIMULATED_CALL_LOG: callLog });
    workers.push(a);
    await waitHealthy(a);
    const pageId = await quire.page(ws);
    const job = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 20, latencyMs: 200, readPages: true } },
    });
    const reads = () =>
      readCallLog(callLog).filter((c) => c.op === 'read' && c.jobId === job.jobId);
    for (let waited = 0; reads().length === 0; waited += 100) {
      if (waited > 60_000) throw new Error('the page read never started');
      await new Promise((r) => setTimeout(r, 100));
    }
    a.child.kill('SIGKILL');
    await a.exited;
    // Killed inside the pass: nothing of it was saved.
    const early = await quire.db.pool.query('SELECT 1 FROM job_checkpoints WHERE job_id = $1', [
      job.jobId,
    ]);
    expect(early.rows).toEqual([]);
    const b = spawnWorker(quire, 'read-b', { QUIRE_SIMULATED_CALL_LOG: callLog });
    workers.push(b);
    const done = await untilStatus(quire, ws, job.jobId, 'completed');
    expect([done.completedSegments, done.totalSegments, done.resultRevision]).toEqual([20, 20, 1]);
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts.map((x) => [x.outcome, x.errorCategory])).toEqual([
      ['lease_expired', 'crashed'],
      ['completed', null],
    ]);
    expect(reads().map((c) => c.attempt)).toEqual([1, 2]);
    // What was saved on the way went with the commit (D11); the log kept a copy of each row.
    const saved = await quire.db.pool.query(
      `SELECT DISTINCT attempt_number FROM ${CHECKPOINT_LOG} WHERE job_id = $1`,
      [job.jobId],
    );
    expect(saved.rows).toEqual([{ attempt_number: 2 }]);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
    b.child.kill('SIGTERM');
    await b.exited;
  });

  it('O1 T3 SIGTERM drains the running activity within the grace period and exits 0', async () => {
    const a = spawnWorker(quire, 'drain', { QUIRE_SHUTDOWN_GRACE_MS: '15000' });
    workers.push(a);
    await waitHealthy(a);
    const pageId = await quire.page(ws);
    const job = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 14, latencyMs: 250 } },
    });
    await untilSegments(quire, ws, job.jobId, 2);
    const signalled = Date.now();
    a.child.kill('SIGTERM');
    const exit = await a.exited;
    const drainSeconds = (Date.now() - signalled) / 1000;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(drainSeconds).toBeLessThan(15);
    // The activity in flight (one slice: all fourteen lines) finished before the process left.
    // Read from the log: the drained workflow may have committed meanwhile, and with the
    // commit its checkpoints went (D11).
    const saved = await quire.db.pool.query(
      `SELECT count(*)::int AS n FROM ${CHECKPOINT_LOG} WHERE job_id = $1 AND stage = 'recognize'`,
      [job.jobId],
    );
    expect(saved.rows[0].n).toBe(14);
    expect(a.output()).toContain('worker stopped');
    const b = spawnWorker(quire, 'after-drain');
    workers.push(b);
    const done = await untilStatus(quire, ws, job.jobId, 'completed');
    expect(done.completedSegments).toBe(14);
    // Drained work was not cut off: the same attempt carried on, nothing was charged as a crash.
    expect((await listAttempts(quire.db.pool, job.jobId)).map((x) => x.outcome)).toEqual([
      'completed',
    ]);
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
    b.child.kill('SIGTERM');
    await b.exited;
  });
});
