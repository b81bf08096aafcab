import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { QuireClient } from '../../client';
import { parseConfig, type QuireConfig } from '../../core/config';
import { auditInvariants } from '../../db/audit';
import { getJob } from '../../db/jobs';
import { createPool, type Pool } from '../../db/pool';
import { createSubscription } from '../../db/webhooks';
import { createWorkspace } from '../../db/workspaces';
import { type Cluster, type ClusterOptions, startCluster } from '../../scripts/lib/cluster';
import { connectTemporalClient, createQuireClient } from '../../worker/createWorker';
import { type HttpsReceiver, startHttpsReceiver } from './httpsReceiver';
import { seedPage } from './pages';
import { eventually } from './wait';

/**
 * Cluster mode under test (D2/D3/D5): the real topology (own PostgreSQL, Temporal server,
 * object server, worker processes, web replicas on the production build) with the simulated
 * engine, short timeouts, and a real HTTPS webhook receiver, so every drill can check that
 * jobs committed once, the auditor is clean and deliveries completed.
 */
const ROOT = join(__dirname, '../..');
/** The production build the cluster tests share, rebuilt only when web sources change. */
export const CLUSTER_TEST_WEB_DIST = '.next-cluster';

export interface TestCluster {
  cluster: Cluster;
  pool: Pool;
  config: QuireConfig;
  temporal: Client;
  client: QuireClient;
  receiver: HttpsReceiver;
  /** A workspace with an API key and a webhook subscription to the receiver. */
  workspace(): Promise<{ workspaceId: number; apiKey: string }>;
  /** `count` image pages and one job each on the simulated engine. */
  startBatch(
    workspaceId: number,
    count: number,
    simulated: { lines: number; latencyMs: number },
  ): Promise<string[]>;
  untilCompleted(workspaceId: number, jobIds: string[], timeoutMs?: number): Promise<void>;
  /** D3's verdict: each job committed once, the auditor clean, every delivery done. */
  verify(workspaceId: number, jobIds: string[]): Promise<void>;
  close(): Promise<void>;
}

export async function startTestCluster(
  options: Partial<
    Pick<ClusterOptions, 'workers' | 'webReplicas' | 'ui' | 'env' | 'identityPeople'>
  > = {},
): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'quire-cluster-'));
  const receiver = await startHttpsReceiver();
  const caFile = join(dir, 'receiver-ca.pem');
  writeFileSync(caFile, receiver.ca);
  const cluster = await startCluster({
    root: ROOT,
    dir,
    secretKey: randomBytes(32).toString('hex'),
    workers: options.workers ?? 3,
    webReplicas: options.webReplicas ?? 2,
    webDistDir: process.env.QUIRE_TEST_CLUSTER_WEB_DIST ?? CLUSTER_TEST_WEB_DIST,
    ui: options.ui ?? false,
    identityPeople: options.identityPeople,
    fastPostgres: true,
    env: {
      QUIRE_ENABLE_SIMULATED: '1',
      QUIRE_DEFAULT_PROVIDER: 'simulated',
      QUIRE_HEARTBEAT_TIMEOUT_MS: '3000',
      QUIRE_RETRY_INITIAL_MS: '200',
      QUIRE_RETRY_MAX_MS: '2000',
      QUIRE_SHUTDOWN_GRACE_MS: '5000',
      WORKER_CONCURRENCY: '4',
      QUIRE_WEBHOOK_ALLOW_HOSTS: receiver.allowHost,
      NODE_EXTRA_CA_CERTS: caFile,
      LOG_LEVEL: 'warn',
      ...options.env,
    },
    log: () => {},
  });
  const { NODE_ENV: _production, ...settings } = cluster.quireEnv;
  const config = parseConfig(settings);
  const pool = createPool(cluster.databaseUrl, 5);
  const temporal = await connectTemporalClient(config);
  const client = createQuireClient(config, temporal, pool, ['simulated']);

  return {
    cluster,
    pool,
    config,
    temporal,
    client,
    receiver,
    async workspace() {
      const created = await createWorkspace(pool, 'Drill');
      const workspaceId = created.workspace.id;
      await createSubscription(pool, config.QUIRE_SECRET_KEY, {
        workspaceId,
        url: `${receiver.origin}/hooks/${workspaceId}`,
        secret: `whsec_${randomBytes(24).toString('base64')}`,
      });
      return { workspaceId, apiKey: created.apiKey };
    },
    async startBatch(workspaceId, count, simulated) {
      const jobIds: string[] = [];
      for (let i = 0; i < count; i++) {
        const { pageId } = await seedPage(pool, { workspaceId, itemId: 'drill-item' });
        const job = await client.startJob({ workspaceId, pageId, options: { simulated } });
        jobIds.push(job.jobId);
      }
      return jobIds;
    },
    async untilCompleted(workspaceId, jobIds, timeoutMs = 180_000) {
      await eventually(
        async () => {
          for (const jobId of jobIds) {
            const job = await getJob(pool, workspaceId, jobId);
            if (job?.status !== 'completed') return undefined;
          }
          return true;
        },
        timeoutMs,
        500,
      );
    },
    async verify(workspaceId, jobIds) {
      const problems: string[] = [];
      for (const jobId of jobIds) {
        const job = await getJob(pool, workspaceId, jobId);
        if (job?.status !== 'completed') problems.push(`${jobId}: ${job?.status}`);
      }
      // Committed exactly once: one engine revision per page, one completed attempt per job.
      const revisions = await pool.query(
        `SELECT j.id, count(r.*)::int AS n FROM transcription_jobs j
           LEFT JOIN page_revisions r ON r.page_id = j.page_id AND r.source = 'engine'
          WHERE j.id = ANY($1) GROUP BY j.id HAVING count(r.*) <> 1`,
        [jobIds],
      );
      for (const row of revisions.rows) problems.push(`${row.id}: ${row.n} engine revisions`);
      const attempts = await pool.query(
        `SELECT job_id, count(*)::int AS n FROM transcription_job_attempts
          WHERE job_id = ANY($1) AND outcome = 'completed' GROUP BY job_id HAVING count(*) <> 1`,
        [jobIds],
      );
      for (const row of attempts.rows) problems.push(`${row.job_id}: ${row.n} completed attempts`);
      const violations = await auditInvariants(pool, { maxAttempts: config.QUIRE_MAX_ATTEMPTS });
      for (const v of violations) problems.push(`audit ${v.check}: ${v.subjects.join(', ')}`);
      if (problems.length > 0) throw new Error(`D3 verdict failed:\n${problems.join('\n')}`);
      // Every event of the workspace was delivered (W2: at least once; each one succeeded).
      await eventually(
        async () => {
          const { rows } = await pool.query(
            `SELECT
               (SELECT count(*)::int FROM event_outbox e
                  JOIN webhook_subscriptions s ON s.workspace_id = e.workspace_id
                 WHERE e.workspace_id = $1 AND e.position > s.after_event_id) AS events,
               (SELECT count(*)::int FROM webhook_deliveries
                 WHERE workspace_id = $1 AND status = 'succeeded') AS delivered`,
            [workspaceId],
          );
          return rows[0].events > 0 && rows[0].events === rows[0].delivered ? true : undefined;
        },
        120_000,
        500,
      );
    },
    async close() {
      await temporal.connection.close().catch(() => {});
      await pool.end().catch(() => {});
      await cluster.stop();
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
