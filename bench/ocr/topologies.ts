import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { TLSConfig } from '@temporalio/client';
import { CLI_ACTOR } from '../../core/actor';
import { createAccount, putMember } from '../../db/accounts';
import { createPool, type Pool } from '../../db/pool';
import { createSession } from '../../db/sessions';
import { createWorkspace } from '../../db/workspaces';
import { startCluster } from '../../scripts/lib/cluster';
import { temporalTlsConfig } from '../../scripts/lib/clusterTls';
import { workerArgs } from '../../scripts/lib/workerBuild';
import { makeTempDir, REPO_ROOT, removeDir } from '../../test/support/fixtures';
import {
  cpuOf,
  postgresBackendCpu,
  postgresByDatabase,
  runningPid,
  treeCpu,
  workerCpu,
} from '../lib/cpu';
import { startBenchStack } from '../lib/stack';

/**
 * Where bench/ocr runs Quire (P6): the dev stack or cluster mode. Each gives the run its
 * database, its Temporal server, the batch upload, and the CPU seconds so far of each of its
 * processes under the name the report uses.
 */
export interface Topology {
  /** Fields of the report that say where the figures come from. */
  describe: Record<string, unknown>;
  /** The worker's build (`compiled` or `tsx`). */
  workerMode: string;
  targets: string;
  reportFile: string;
  /** Quire's database: jobs, pages, checkpoints. */
  pool: Pool;
  workspaceId: number;
  temporalAddress: string;
  /** X7: cluster mode's Temporal asks its clients for a certificate. */
  temporalTls?: TLSConfig;
  /** The Temporal server's Prometheus endpoint: its request counts per page. */
  temporalMetricsUrl: string;
  namespace: string;
  /** Sends the batch's multipart form to the upload route. */
  upload(form: FormData): Promise<Response>;
  /** P8: sends it as the console's upload, pages a person waits for (`interactive`). */
  uploadAsPerson(form: FormData): Promise<Response>;
  sample(): Promise<CpuSnapshot>;
  /** The processes whose CPU during the triggered derivative schedule is the derivatives' (I4). */
  derivativeProcesses: string[];
  close(): Promise<void>;
}

/**
 * CPU seconds so far: the worker's reaped engine children, and each process by name, as a
 * total or, for PostgreSQL backends found by pid, per backend.
 */
export interface CpuSnapshot {
  engine: number;
  /** Minor page faults of the worker and its engine launcher (P6). */
  workerMinorFaults: number;
  /** The worker process's own CPU seconds (its launcher apart) and its live threads' by name. */
  workerOwn: number;
  workerThreads: Record<string, number>;
  processes: Record<string, number | Map<number, number>>;
  /** Cluster mode: PostgreSQL's CPU by the database its backends serve (Quire's, Temporal's). */
  postgresDatabases?: Record<string, number>;
}

/** Each name's seconds between two samples of a by-name view. */
export function namedDelta(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after).map(([name, seconds]) => [name, seconds - (before[name] ?? 0)]),
  );
}

/**
 * The worker's CPU between two snapshots by where it ran (P6): each thread name of the worker
 * process, `exited threads` (the process's own figure less its live threads'), and `launcher`
 * (its engine launcher, the rest of the worker's line).
 */
export function workerThreadDelta(
  before: CpuSnapshot,
  after: CpuSnapshot,
  worker: number,
): Record<string, number> {
  const delta = namedDelta(before.workerThreads, after.workerThreads);
  const live = Object.values(delta).reduce((a, b) => a + b, 0);
  const own = after.workerOwn - before.workerOwn;
  delta['exited threads'] = own - live;
  delta.launcher = worker - own;
  return delta;
}

/**
 * The worker's part of a snapshot: its reaped engines' CPU, its faults, its own CPU and its
 * threads', and `worker`, its line in `processes` (its launcher included).
 */
function workerSnapshot(pid: number): Omit<CpuSnapshot, 'processes'> & { worker: number } {
  const sample = workerCpu(pid);
  return {
    engine: sample.children,
    workerMinorFaults: sample.minorFaults,
    workerOwn: sample.own,
    workerThreads: sample.threads,
    worker: sample.self,
  };
}

/** CPU seconds of each process between two snapshots. */
export function cpuDelta(before: CpuSnapshot, after: CpuSnapshot): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after.processes).map(([name, now]) => {
      const then = before.processes[name];
      if (typeof now === 'number') return [name, now - ((then as number | undefined) ?? 0)];
      let sum = 0;
      const earlier = then as Map<number, number> | undefined;
      for (const [pid, seconds] of now) sum += seconds - (earlier?.get(pid) ?? 0);
      return [name, sum];
    }),
  );
}

/** npm start's defaults: nothing about engines or concurrency is set, in either mode. */
const ENGINE_SETTINGS = [
  'WORKER_CONCURRENCY',
  'QUIRE_ENGINE_THREADS',
  'QUIRE_TESSERACT_ENGINE',
  'QUIRE_DEFAULT_PROVIDER',
];

/**
 * BENCH_WORKER_NODE_FLAGS: Node flags for dev mode's worker alone, space-separated (a profile of a
 * run: `--cpu-prof --cpu-prof-dir=/tmp/prof`; Node refuses `--cpu-prof` in NODE_OPTIONS).
 */
function workerNodeFlags(): string[] {
  return (process.env.BENCH_WORKER_NODE_FLAGS ?? '').split(' ').filter(Boolean);
}

/** The cluster's Temporal metrics address: its frontend's host, the frontend's port + 9. */
function metricsHost(frontend: string): string {
  const at = frontend.lastIndexOf(':');
  return `${frontend.slice(0, at)}:${Number(frontend.slice(at + 1)) + 9}`;
}

async function untilFile(file: string, what: string): Promise<void> {
  for (let waited = 0; ; waited += 200) {
    if (await readFile(file).catch(() => null)) return;
    if (waited > 180_000) throw new Error(what);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Dev mode: a private stack (Temporal dev server, a fresh database on the shared
 * PostgreSQL), one worker, and the upload server that runs the web's batch route.
 */
export async function startDevTopology(dir: string): Promise<Topology> {
  const stack = await startBenchStack(5);
  const env = {
    ...process.env,
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    QUIRE_SECRET_KEY: 'b'.repeat(64),
    QUIRE_BLOB_DIR: path.join(dir, 'blobs'),
    QUIRE_HEALTH_FILE: path.join(dir, 'health.json'),
    QUIRE_WORKFLOW_BUNDLE: stack.workflowBundle,
    LOG_LEVEL: 'warn',
  };
  for (const key of ENGINE_SETTINGS) delete (env as Record<string, string | undefined>)[key];

  const startProcess = (args: string[], ready: RegExp) =>
    new Promise<{ child: ChildProcess; line: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
        cwd: REPO_ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const onData = (chunk: Buffer) => {
        output += chunk.toString('utf8');
        const match = ready.exec(output);
        if (match) resolve({ child, line: match[0] });
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code) =>
        reject(new Error(`${args[0]} exited ${code}: ${output.slice(-2000)}`)),
      );
    });

  const workerMode = process.env.BENCH_WORKER === 'tsx' ? 'tsx' : 'compiled';
  const worker = spawn(
    process.execPath,
    [
      ...workerNodeFlags(),
      ...(workerMode === 'tsx' ? ['--import', 'tsx', 'worker/main.ts'] : workerArgs(REPO_ROOT)),
    ],
    { cwd: REPO_ROOT, env, stdio: 'ignore' },
  );
  const upload = await startProcess(['bench/ocr/ingestServer.ts'], /LISTENING (\d+)/);
  const port = Number(/LISTENING (\d+)/.exec(upload.line)![1]);
  const workspaceId = (
    await stack.pool.query(`INSERT INTO workspaces (name) VALUES ('bench-ocr') RETURNING id`)
  ).rows[0].id as number;
  await untilFile(env.QUIRE_HEALTH_FILE, 'the worker did not become healthy');

  return {
    describe: {},
    workerMode,
    targets: 'quire/bare >= 0.8 with CER <= 0.01; orchestration <= 0.1 CPU s/page',
    reportFile: 'bench/ocr/last-run.json',
    pool: stack.pool,
    workspaceId,
    temporalAddress: stack.temporalAddress,
    temporalMetricsUrl: stack.temporalMetricsUrl,
    namespace: 'default',
    upload: (form) =>
      fetch(`http://127.0.0.1:${port}/ws/${workspaceId}/batches`, { method: 'POST', body: form }),
    uploadAsPerson: (form) =>
      fetch(`http://127.0.0.1:${port}/ws/${workspaceId}/console-batches`, {
        method: 'POST',
        body: form,
      }),
    async sample() {
      const { worker: workerLine, ...workerFields } = workerSnapshot(worker.pid!);
      return {
        ...workerFields,
        processes: {
          worker: workerLine,
          upload: cpuOf(upload.child.pid!).self,
          temporal: cpuOf(stack.temporalPid!).self,
          postgresBackends: await postgresBackendCpu(stack.pool),
        },
      };
    },
    derivativeProcesses: ['worker', 'temporal', 'postgresBackends'],
    async close() {
      worker.kill('SIGTERM');
      upload.child.kill('SIGTERM');
      if (worker.exitCode === null && worker.signalCode === null) {
        await new Promise((r) => worker.once('exit', r));
      }
      await stack.close();
    },
  };
}

/**
 * Cluster mode (D2): scripts/lib/cluster.ts's production topology with one worker on the
 * engine defaults and one web replica on the console's production build; the batch goes
 * through the web's real API with an API key. CPU per process from /proc: the worker (its
 * engine children apart), the web replica's process tree, the Temporal server, the object
 * server, and every process of the cluster's own PostgreSQL (its postmaster's tree: Quire's
 * backends, Temporal's persistence and visibility, and PostgreSQL's own processes).
 */
export async function startClusterTopology(): Promise<Topology> {
  // Its own directory: PostgreSQL (run as its own user) must reach into it.
  const dir = await makeTempDir('quire-bench-ocr-cluster-');
  const workers = 1;
  const webReplicas = 1;
  const cluster = await startCluster({
    root: REPO_ROOT,
    dir,
    secretKey: randomBytes(32).toString('hex'),
    workers,
    webReplicas,
    // The build the cluster tests and bench/cluster share.
    webDistDir: process.env.QUIRE_TEST_CLUSTER_WEB_DIST ?? '.next-cluster',
    ui: false,
    fastPostgres: true,
    // Empty is unset: the topology's WORKER_CONCURRENCY gives way to the worker's default.
    env: { ...Object.fromEntries(ENGINE_SETTINGS.map((key) => [key, ''])), LOG_LEVEL: 'warn' },
    log: (line) => process.stderr.write(`bench: ${line}\n`),
  });
  try {
    const pool = createPool(cluster.databaseUrl, 5);
    const { workspace, apiKey } = await createWorkspace(pool, 'bench-ocr');
    const postmaster = runningPid('PostgreSQL', cluster.postgres.pid());
    const pidOf = (process: { name: string; pid(): number | undefined }) =>
      runningPid(process.name, process.pid());
    const worker = pidOf(cluster.workers[0]!);
    const web = cluster.webs[0]!;
    const webPid = pidOf(web);
    const temporal = pidOf(cluster.temporal);
    const objectStore = pidOf(cluster.objectServer);
    const upload = (form: FormData) =>
      fetch(`${web.url}/api/v1/workspaces/${workspace.id}/batches`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}` },
        body: form,
      });
    // P8: an editor's console session, as a person signed in to the console uploads.
    const account = await createAccount(pool, CLI_ACTOR, {
      email: 'editor@bench-ocr.invalid',
      name: 'Bench editor',
      passwordHash: null,
    });
    await putMember(pool, CLI_ACTOR, {
      workspaceId: workspace.id,
      accountId: account.id,
      role: 'editor',
    });
    const session = await createSession(
      pool,
      { accountId: account.id, workspaceId: workspace.id },
      86_400,
    );
    const uploadAsPerson = (form: FormData) =>
      fetch(`${web.url}/console-api/batches`, {
        method: 'POST',
        // web/lib/session.ts's cookie; the console's same-origin check reads Origin.
        headers: {
          cookie: `quire_session=${session}`,
          origin: new URL(cluster.quireEnv.QUIRE_PUBLIC_URL || web.url).origin,
        },
        body: form,
      });
    // A replica in service has loaded its batch routes (Next loads a route at its first
    // request): one upload without files to each, refused, before anything is measured.
    for (const send of [upload, uploadAsPerson]) {
      const warm = await send(new FormData());
      if (warm.status !== 400)
        throw new Error(`warm-up upload: ${warm.status} ${await warm.text()}`);
      await warm.body?.cancel();
    }
    return {
      describe: {
        mode: 'cluster',
        topology: {
          workers,
          webReplicas,
          temporal: 'server on PostgreSQL (persistence and SQL visibility)',
          objectStore: 'S3-compatible object server',
          postgres: 'own instance, fsync off',
          upload: 'POST /api/v1/workspaces/{ws}/batches on the web replica',
        },
      },
      workerMode: 'compiled',
      targets: 'quire/bare >= 0.85 with CER <= 0.01; orchestration <= 0.1 CPU s/page',
      reportFile: 'bench/ocr/last-run-cluster.json',
      pool,
      workspaceId: workspace.id,
      temporalAddress: cluster.temporalAddress,
      temporalTls: temporalTlsConfig(cluster.temporalTls, 'client'),
      // deploy/temporal/server.yaml: Prometheus listens on the frontend's port + 9.
      temporalMetricsUrl: `http://${metricsHost(cluster.temporalAddress)}/metrics`,
      namespace: cluster.quireEnv.TEMPORAL_NAMESPACE || 'default',
      upload,
      uploadAsPerson,
      async sample() {
        const { worker: workerLine, ...workerFields } = workerSnapshot(worker);
        // One walk of the server's processes gives its line and that line by database.
        const postgresDatabases = postgresByDatabase(postmaster);
        return {
          ...workerFields,
          processes: {
            worker: workerLine,
            web: treeCpu(webPid),
            temporal: treeCpu(temporal),
            objectStore: treeCpu(objectStore),
            postgres: Object.values(postgresDatabases).reduce((a, b) => a + b, 0),
          },
          postgresDatabases,
        };
      },
      derivativeProcesses: ['worker', 'temporal', 'objectStore', 'postgres'],
      async close() {
        await pool.end().catch(() => {});
        await cluster.stop();
        await removeDir(dir);
      },
    };
  } catch (error) {
    await cluster.stop();
    await removeDir(dir);
    throw error;
  }
}
