import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBlobStore } from '../../blobs/fromConfig';
import { auditInvariants } from '../../db/audit';
import { getJob } from '../../db/jobs';
import { createProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import { objectServerEndpoint } from '../../scripts/lib/objectServer';
import { createQuireWorker } from '../../worker/createWorker';
import { storedImagePage } from '../support/blobReferences';
import { GatedEngine } from '../support/countingProvider';
import { startTestObjectServer, type TestObjectServer } from '../support/objectServer';
import { createTestQuire, silentLogger, type TestQuire } from '../support/quire';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import { eventually } from '../support/wait';

/**
 * D7 with a real object store that stops answering: the worker reaches versitygw through a TCP
 * proxy that the test freezes (connections accepted, open or new, but no byte passes: a
 * SIGSTOPped server, a black-holed path) for longer than the activity heartbeat timeout (3 s
 * here), mid-batch, while the batch's steps fetch their pages' images; the test's own store and
 * PostgreSQL stay up. QUIRE_TEST_STORE_FREEZE_MS sets how long it stays frozen.
 */
const FREEZE_MS = Number(process.env.QUIRE_TEST_STORE_FREEZE_MS ?? 10_000);
const BATCH = 6;

const engine = new GatedEngine(new SimulatedProvider());
// One step at a time per slot, two slots: most of the batch meets the store frozen.
let quire: TestQuire;
let objects: TestObjectServer;
let proxy: TcpProxy;

beforeAll(async () => {
  quire = await createTestQuire({ WORKER_CONCURRENCY: '2' }, createProviderRegistry([engine]));
  objects = await startTestObjectServer();
  proxy = await startTcpProxy({ host: '127.0.0.1', port: objects.settings.port });
});

afterAll(async () => {
  await proxy?.close();
  await objects?.close();
  await quire?.close();
});

/** The worker's store: the installation's S3 settings, its endpoint the proxy, short bounds. */
function workerConfig() {
  const s = objects.settings;
  return {
    ...quire.config,
    QUIRE_BLOB_STORE: 's3' as const,
    QUIRE_S3_ENDPOINT: objectServerEndpoint({ ...s, port: proxy.port }),
    QUIRE_S3_BUCKET: s.bucket,
    QUIRE_S3_REGION: s.region,
    QUIRE_S3_FORCE_PATH_STYLE: true,
    QUIRE_S3_ACCESS_KEY_ID: s.accessKeyId,
    QUIRE_S3_SECRET_ACCESS_KEY: s.secretAccessKey,
    // The bounds of core/config.ts (QUIRE_S3_*), short here.
    QUIRE_S3_CONNECT_TIMEOUT_MS: 1_000,
    QUIRE_S3_SOCKET_TIMEOUT_MS: 1_500,
  };
}

function readsOf(jobId: string): number {
  return engine.calls.filter((c) => c.jobId === jobId && c.op === 'read').length;
}

describe('the object store stops answering for the worker (D7)', () => {
  it('D7 the object store frozen (not closed) mid-batch for longer than the heartbeat timeout: each call fails within its bound, the waiting steps keep their heartbeat, no attempt is charged, no read repeated, every job completes once after it thaws', async () => {
    const ws = await quire.workspace();
    const config = workerConfig();
    const worker = await createQuireWorker({
      config,
      pool: quire.db.pool,
      providers: quire.providers,
      connection: quire.connection,
      client: quire.client,
      blobStore: createBlobStore(config),
      workflowBundle: process.env.QUIRE_TEST_WORKFLOW_BUNDLE
        ? { codePath: process.env.QUIRE_TEST_WORKFLOW_BUNDLE }
        : undefined,
      logger: silentLogger,
      identity: 'worker-frozen-store',
    });
    const running = worker.run();
    const direct = objects.store();
    const startedAt = Date.now();
    try {
      // Each page its own object, so every step fetches its image through the proxy.
      const jobs = [];
      for (let i = 0; i < BATCH; i++) {
        const pageId = await storedImagePage(quire.db.pool, direct, ws, {
          bytes: Buffer.from(`page ${i} of a frozen store`),
          mediaType: 'image/png',
          width: 100,
          height: 40,
        });
        jobs.push({ pageId });
      }
      let frozeAt = 0;
      engine.afterRead = async () => {
        engine.afterRead = async () => {};
        proxy.freeze();
        frozeAt = Date.now();
      };
      const started = [];
      for (const { pageId } of jobs) {
        started.push(
          await quire.client.startJob({
            workspaceId: ws,
            pageId,
            options: { simulated: { lines: 3, readPages: true } },
          }),
        );
      }
      await eventually(async () => (frozeAt > 0 ? true : undefined), 30_000, 20);
      const acceptedBefore = proxy.accepted();
      await new Promise((resolve) => setTimeout(resolve, FREEZE_MS));
      // Mid-batch: some jobs were still waiting on the store when it thawed.
      const waiting = started.filter((job) => readsOf(job.jobId) === 0);
      expect(waiting.length).toBeGreaterThan(0);
      for (const job of waiting)
        expect((await getJob(quire.db.pool, ws, job.jobId))?.status).toBe('running');
      // The calls gave up on their silent connections within their bounds and tried new ones.
      expect(proxy.accepted()).toBeGreaterThan(acceptedBefore);
      proxy.thaw();
      const thawedAt = Date.now();
      for (const job of started) {
        const outcome = await quire.temporal.workflow.getHandle(job.workflowId).result();
        expect(outcome).toMatchObject({ status: 'completed', attempts: 1 });
      }
      const ids = started.map((job) => job.jobId);
      const charged = await quire.db.pool.query(
        `SELECT job_id, attempt_number, outcome, error_category FROM transcription_job_attempts
          WHERE job_id = ANY($1) AND (outcome <> 'completed' OR attempt_number <> 1) AND NOT refunded`,
        [ids],
      );
      expect(charged.rows).toEqual([]);
      for (const id of ids) expect(readsOf(id)).toBe(1);
      const paid = await quire.db.pool.query(
        `SELECT job_id, count(*)::int AS n FROM provider_calls
          WHERE job_id = ANY($1) AND operation = 'read' GROUP BY job_id HAVING count(*) <> 1`,
        [ids],
      );
      expect(paid.rows).toEqual([]);
      expect(await auditInvariants(quire.db.pool)).toEqual([]);
      process.stdout.write(
        `${JSON.stringify({
          drill: 'object-store-frozen',
          jobs: BATCH,
          waitingAtThaw: waiting.length,
          freezeMs: FREEZE_MS,
          recoveredSeconds: (Date.now() - thawedAt) / 1000,
          totalSeconds: (Date.now() - startedAt) / 1000,
        })}\n`,
      );
    } finally {
      proxy.thaw();
      worker.shutdown();
      await running;
    }
  });
});
