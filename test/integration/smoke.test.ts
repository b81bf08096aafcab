import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getJob } from '../../db/jobs';
import { createTestQuire, type TestQuire } from '../support/quire';

let quire: TestQuire;

beforeAll(async () => {
  quire = await createTestQuire();
});
afterAll(async () => {
  await quire?.close();
});

describe('the stack runs end to end', () => {
  it('T1 a job started through the typed client is committed by a real worker and read back', async () => {
    const ws = await quire.workspace();
    const pageId = await quire.page(ws);
    const worker = await quire.newWorker();
    const result = await worker.runUntil(async () => {
      const started = await quire.client.startJob({
        workspaceId: ws,
        pageId,
        options: { simulated: { lines: 3 } },
      });
      expect(started.workflowId).toBe(`transcription-job-${started.jobId}`);
      const handle = quire.temporal.workflow.getHandle(started.workflowId);
      return { started, outcome: await handle.result() };
    });
    expect(result.outcome.status).toBe('completed');
    const job = await getJob(quire.db.pool, ws, result.started.jobId);
    expect(job?.status).toBe('completed');
    expect(job?.resultRevision).toBe(1);
    const page = await quire.db.pool.query(
      'SELECT revision, search_text FROM pages WHERE id = $1',
      [pageId],
    );
    expect(page.rows[0].revision).toBe(1);
    expect(page.rows[0].search_text.split('\n')).toHaveLength(3);
  });
});
