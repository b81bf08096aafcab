import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pageActions } from '../../bench/lib/pageActions';
import { getJob } from '../../db/jobs';
import {
  type DevServer,
  findOrBuildTemporal,
  freePort,
  startDevServer,
} from '../../scripts/lib/temporal';
import { createTestDatabase } from '../support/db';
import { createTestQuire, type TestQuire } from '../support/quire';

/**
 * D14: what a page costs in billable Temporal actions (Temporal Cloud's unit), counted as
 * bench/temporal/actions.ts counts them: each page's history, plus the heartbeats and queries
 * the server answered. A server of this file's own, for its request counts to be this file's.
 */
const TARGET_ACTIONS_PER_PAGE = 4;

let server: DevServer;
let metricsUrl: string;
let quire: TestQuire;
let ws: number;

beforeAll(async () => {
  const metricsPort = await freePort();
  server = await startDevServer(
    findOrBuildTemporal(() => {}),
    { headless: true, metricsPort },
  );
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  // Heartbeats as a deployment has them (QUIRE_HEARTBEAT_TIMEOUT_MS's default), not the tests' 3 s.
  quire = await createTestQuire({ QUIRE_HEARTBEAT_TIMEOUT_MS: '60000' }, undefined, {
    db: await createTestDatabase(),
    temporalAddress: server.address,
  });
  ws = await quire.workspace();
});
afterAll(async () => {
  await quire?.close();
  await server?.stop();
});

describe('billable Temporal actions a page (D14)', () => {
  it('D14 a page read in one pass costs at most 4 billable actions: no status upsert, the status read from the database', async () => {
    const worker = await quire.newWorker();
    const measured = await worker.runUntil(() =>
      pageActions(
        quire,
        ws,
        metricsUrl,
        { kind: 'image', simulated: { lines: 5, readPages: true } },
        3,
      ),
    );
    // The start, the claim's local activity (with the patch markers of the same task), the
    // engine step; at most its first heartbeat beside them.
    expect(measured.historyByPage).toEqual([3, 3, 3]);
    expect(measured.history.upsertSearchAttributes).toBeUndefined();
    expect(measured.heartbeatsPerPage).toBeLessThanOrEqual(1);
    expect(measured.maxPerPage).toBeLessThanOrEqual(TARGET_ACTIONS_PER_PAGE);
  });

  it('D14 a run begun now carries no status search attribute, at its start or after; its job says completed in the database', async () => {
    const worker = await quire.newWorker();
    const pageId = await quire.page(ws);
    const job = await quire.client.startJob({
      workspaceId: ws,
      pageId,
      options: { simulated: { lines: 3 } },
    });
    const handle = quire.temporal.workflow.getHandle(job.workflowId);
    await worker.runUntil(() => handle.result());
    const { events } = await handle.fetchHistory();
    const started = events?.[0]?.workflowExecutionStartedEventAttributes;
    expect(Object.keys(started?.searchAttributes?.indexedFields ?? {})).toEqual(
      expect.arrayContaining(['QuireWorkspaceId', 'QuireJobId', 'QuirePageId', 'QuireProvider']),
    );
    expect(started?.searchAttributes?.indexedFields?.QuireStatus).toBeUndefined();
    const upserted = (events ?? []).flatMap((e) =>
      Object.keys(
        e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {},
      ),
    );
    expect(upserted.filter((key) => key !== 'TemporalChangeVersion')).toEqual([]);
    expect((await getJob(quire.db.pool, ws, job.jobId))?.status).toBe('completed');
  });
});
