import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAttempts } from '../../db/jobs';
import { createTestQuire, type TestQuire, untilStatus } from '../support/quire';
import { spawnWorker, type WorkerProcess, waitHealthy } from '../support/workerProcess';

/**
 * P6: the worker as `npm start`, cluster mode and the image run it, one compiled module
 * (scripts/lib/workerBuild.ts), not the sources through tsx: it starts, polls and finishes a
 * job with the same fences and attempts as the sources do.
 */
let quire: TestQuire;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  quire = await createTestQuire();
});
afterAll(async () => {
  worker?.child.kill('SIGKILL');
  await quire?.close();
});

describe('P6 the compiled worker', () => {
  it('P6 the compiled worker becomes healthy and completes a job in one attempt', async () => {
    worker = spawnWorker(quire, 'compiled', {}, { compiled: true });
    await waitHealthy(worker);
    const ws = await quire.workspace();
    const pageId = await quire.page(ws);
    const job = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 5, latencyMs: 10 } },
    });
    const done = await untilStatus(quire, ws, job.jobId, 'completed');
    expect([done.completedSegments, done.failedSegments, done.resultRevision]).toEqual([5, 0, 1]);
    const attempts = await listAttempts(quire.db.pool, job.jobId);
    expect(attempts.map((a) => [a.outcome, a.errorCategory])).toEqual([['completed', null]]);
    // What ran is the compiled module, with no loader of tsx in the process.
    const commandLine = readFileSync(`/proc/${worker.child.pid}/cmdline`, 'utf8').split('\0');
    expect(commandLine.some((arg) => arg.endsWith('.worker-build/main.mjs'))).toBe(true);
    expect(commandLine.join(' ')).not.toContain('tsx');
  });
});
