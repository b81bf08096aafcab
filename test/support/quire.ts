import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { type BlobStore, createLocalBlobStore } from '../../blobs';
import type { QuireClient } from '../../client';
import { parseConfig, type QuireConfig } from '../../core/config';
import { WORKER_GRPC_COMPRESSION } from '../../core/temporalConnection';
import { createProviderRegistry, type ProviderRegistry } from '../../providers/registry';
import { SimulatedProvider } from '../../providers/simulated';
import {
  createMaintenanceWorker,
  createQuireClient,
  createQuireWorker,
  type QuireWorker,
  type QuireWorkerDeps,
} from '../../worker/createWorker';
import { createTestDatabase, type TestDatabase } from './db';
import { seedPage } from './pages';
import { eventually } from './wait';

/**
 * A Quire under test: its own database, its own task queue on the shared real Temporal dev
 * server, a real worker (not yet running) and the typed client.
 */
export interface TestQuire {
  db: TestDatabase;
  config: QuireConfig;
  temporal: Client;
  client: QuireClient;
  providers: ProviderRegistry;
  connection: NativeConnection;
  blobStore: BlobStore;
  newWorker(
    identity?: string,
    /** `providers`: a worker that registers other engines than the client knows. */
    extra?: Partial<Pick<QuireWorkerDeps, 'onProviderPaused' | 'now' | 'providers'>>,
  ): Promise<QuireWorker>;
  /** O3: a worker on the maintenance queue, for tests that run the scheduled workflows. */
  newMaintenanceWorker(identity?: string): Promise<Worker>;
  workspace(name?: string): Promise<number>;
  page(workspaceId: number, kind?: 'image' | 'audio'): Promise<number>;
  close(): Promise<void>;
}

export const silentLogger = { info() {}, warn() {}, error() {} };

export function testConfig(overrides: Record<string, string> = {}): QuireConfig {
  const queue = `test-${randomBytes(5).toString('hex')}`;
  return parseConfig({
    QUIRE_TASK_QUEUE: queue,
    QUIRE_MAINTENANCE_TASK_QUEUE: `${queue}-maintenance`,
    QUIRE_SECRET_KEY: randomBytes(32).toString('hex'),
    QUIRE_HEARTBEAT_TIMEOUT_MS: '3000',
    QUIRE_RETRY_INITIAL_MS: '50',
    QUIRE_RETRY_MAX_MS: '200',
    QUIRE_SHUTDOWN_GRACE_MS: '5000',
    WORKER_CONCURRENCY: '4',
    QUIRE_DEFAULT_PROVIDER: 'simulated',
    // M2: the simulated engine exists only where tests and benchmarks ask for it.
    QUIRE_ENABLE_SIMULATED: '1',
    LOG_LEVEL: 'silent',
    ...overrides,
  });
}

export function temporalAddress(): string {
  const address = process.env.QUIRE_TEST_TEMPORAL_ADDRESS;
  if (!address)
    throw new Error('no Temporal dev server: run tests through the integration project');
  return address;
}

export async function createTestQuire(
  overrides: Record<string, string> = {},
  providers: ProviderRegistry = createProviderRegistry([new SimulatedProvider()]),
  /** A benchmark's own database and Temporal server (bench/lib/stack.ts), not the tests'. */
  stack?: { db: TestDatabase; temporalAddress: string },
): Promise<TestQuire> {
  const db = stack?.db ?? (await createTestDatabase());
  const address = stack?.temporalAddress ?? temporalAddress();
  const config = { ...testConfig(overrides), DATABASE_URL: db.url };
  const connection = await NativeConnection.connect({
    address,
    grpcCompression: WORKER_GRPC_COMPRESSION,
  });
  const clientConnection = await Connection.connect({ address });
  const temporal = new Client({
    connection: clientConnection,
    namespace: config.TEMPORAL_NAMESPACE,
  });
  const client = createQuireClient(config, temporal, db.pool, providers.names());
  const blobStore = createLocalBlobStore(mkdtempSync(join(tmpdir(), 'quire-blobs-')));
  const workerDeps = {
    config,
    pool: db.pool,
    providers,
    connection,
    client,
    blobStore,
    workflowBundle: process.env.QUIRE_TEST_WORKFLOW_BUNDLE
      ? { codePath: process.env.QUIRE_TEST_WORKFLOW_BUNDLE }
      : undefined,
  };
  return {
    db,
    config,
    temporal,
    client,
    providers,
    connection,
    blobStore,
    newWorker: (identity, extra) =>
      createQuireWorker({
        ...extra,
        ...workerDeps,
        providers: extra?.providers ?? workerDeps.providers,
        logger: silentLogger,
        identity,
        audioPollMs: 50,
      }),
    newMaintenanceWorker: (identity) => createMaintenanceWorker({ ...workerDeps, identity }),
    async workspace(name = 'Test archive') {
      const { rows } = await db.pool.query(
        'INSERT INTO workspaces (name) VALUES ($1) RETURNING id',
        [name],
      );
      return rows[0].id as number;
    },
    async page(workspaceId, kind = 'image') {
      return (await seedPage(db.pool, { workspaceId, kind })).pageId;
    },
    async close() {
      await clientConnection.close();
      await connection.close();
      await db.drop();
    },
  };
}

export { eventually } from './wait';

/** Waits until a job has recognized at least `count` segments. */
export async function untilSegments(
  quire: TestQuire,
  workspaceId: number,
  jobId: string,
  count: number,
) {
  const { getJob } = await import('../../db/jobs');
  return eventually(async () => {
    const job = await getJob(quire.db.pool, workspaceId, jobId);
    return job && job.completedSegments >= count ? job : undefined;
  });
}

/** Waits until a job has the given status, and returns its row. */
export async function untilStatus(
  quire: TestQuire,
  workspaceId: number,
  jobId: string,
  status: string,
  timeoutMs = 90_000,
) {
  const { getJob } = await import('../../db/jobs');
  let seen = 'no such job';
  try {
    return await eventually(
      async () => {
        const job = await getJob(quire.db.pool, workspaceId, jobId);
        if (job) seen = `${job.status}, stage ${job.stage}, attempt ${job.lastAttemptNumber}`;
        return job?.status === status ? job : undefined;
      },
      timeoutMs,
      200,
    );
  } catch (error) {
    // Say where the job stood, so a timeout tells a stuck job from a wrongly ended one.
    throw new Error(`job ${jobId} not ${status}, last seen ${seen}: ${(error as Error).message}`);
  }
}
