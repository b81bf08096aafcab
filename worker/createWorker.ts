import { hostname } from 'node:os';
import { Context } from '@temporalio/activity';
import { Client } from '@temporalio/client';
import {
  bundleWorkflowCode,
  NativeConnection,
  Runtime,
  type TunerHolder,
  Worker,
  type WorkerOptions,
  type WorkflowBundle,
} from '@temporalio/worker';
import { createMaintenanceActivities } from '../activities/maintenance';
import { PagesInHand } from '../activities/pagesInHand';
import { createTranscriptionActivities, type TranscriptionDeps } from '../activities/transcription';
import type { BlobStore } from '../blobs';
import { localPathWhenAvailable } from '../blobs/available';
import { QuireClient } from '../client';
import type { QuireConfig } from '../core/config';
import type { Logger } from '../core/logger';
import { interactiveTaskQueue } from '../core/temporal';
import { workerConnectionOptions } from '../core/temporalConnection';
import { createJobStore } from '../db/jobStore';
import type { Pool } from '../db/pool';
import { connectTemporal } from '../net/temporalClient';
import type { TemporalToken } from '../net/temporalToken';
import { createEngines } from '../providers/catalogue';
import { createProviderRegistry, type ProviderRegistry } from '../providers/registry';
import { maintenanceSchedules } from './schedules';
import { quireSinks } from './sinks';
import { WorkflowTaskSlots } from './workflowTaskSlots';

/**
 * Builds a Quire worker over injected dependencies, for the worker process and for tests.
 * Workflows come from a prebuilt bundle when given (tests bundle once per run).
 */
export const WORKFLOWS_PATH = new URL('../workflows/index.ts', import.meta.url).pathname;

export function workerIdentity(): string {
  return `quire-worker@${hostname()}:${process.pid}`;
}

/**
 * The engines a worker process registers: every provider the catalogue enables under its
 * configuration — the offline engines and the simulated one always, a remote
 * engine when its base URL is set (Q2).
 */
export function createWorkerProviders(config: QuireConfig): ProviderRegistry {
  return createProviderRegistry(createEngines(config));
}

export interface QuireWorkerDeps {
  config: QuireConfig;
  pool: Pool;
  providers: ProviderRegistry;
  logger: Logger;
  connection: NativeConnection;
  client: QuireClient;
  blobStore: BlobStore;
  identity?: string;
  workflowBundle?: WorkerOptions['workflowBundle'];
  audioPollMs?: number;
  onProviderPaused?: TranscriptionDeps['onProviderPaused'];
  /** Injected clock (tests of budget days). */
  now?: () => Date;
  /** D1: told when the worker stops because it does not hold the installation's key. */
  onFleetKeyMismatch?: () => void;
  /** D8: told when the worker stops because its blob store is not the fleet's. */
  onConfigurationFault?: (setting: string) => void;
}

/**
 * P8: how many workflow tasks a worker holds at once. Temporal orders a task queue by
 * priority, but a worker runs the workflow tasks it has taken (and the claim and commit they
 * carry as local activities) first come, first served; the SDK's 40 let a person's page wait
 * behind 39 bulk ones inside the worker, where no priority applies (behind 2,000 pages, about
 * 6 s of its 15 s in bench/priority). Held to half the activity slots (at least 4), the rest
 * of the backlog waits at the server, and the person's next task is the next one taken. A
 * page's workflow tasks are short beside its engine steps, so this is no throughput limit: the
 * bench's backlog ran faster, not slower (docs/design.md, P8).
 */
export function workflowTaskSlots(activitySlots: number): number {
  return Math.max(4, Math.ceil(activitySlots / 2));
}

/**
 * M5: how many pages a worker holds an attempt for before its bulk worker takes another: one
 * for each activity slot and each workflow task slot, enough to keep every activity slot busy
 * while the rest of its pages are between steps (docs/design.md, M5).
 */
export function pageBound(activitySlots: number): number {
  return activitySlots + workflowTaskSlots(activitySlots);
}

/** The SDK's default for local activities (claims, commits): they seldom wait for a slot. */
const LOCAL_ACTIVITY_SLOTS = 100;

/**
 * P8: a process's transcription worker is two Temporal workers sharing one set of activities
 * (so one engine pool, whose waiting line puts a person's calls first): one on the bulk queue
 * and one on the interactive queue a person's pages start on (`jobTaskQueue`). Each has the
 * process's workflow and activity slots, so a person's task never waits for a slot a batch
 * holds, and either queue alone gets the whole worker when the other is empty; the engine
 * pool (QUIRE_ENGINE_THREADS) still bounds how many engine calls run at once. The two start,
 * stop and fail together.
 */
export class QuireWorker {
  readonly workers: readonly [Worker, Worker];

  constructor(
    readonly bulk: Worker,
    readonly interactive: Worker,
    /** M5: the pages this process holds an attempt for (what the tests read). */
    readonly pagesInHand: PagesInHand,
  ) {
    this.workers = [bulk, interactive];
  }

  /** Runs both until either stops; the first failure is rethrown once both have drained. */
  run(): Promise<void> {
    return runWorkers(this.workers);
  }

  shutdown(): void {
    shutdownRunning(this.workers);
  }

  /** The bulk worker's state, or `FAILED` when either failed. */
  getState(): ReturnType<Worker['getState']> {
    return this.workers.some((w) => w.getState() === 'FAILED') ? 'FAILED' : this.bulk.getState();
  }

  /** Runs until the work settles, then shuts down and drains (as `Worker.runUntil`). */
  async runUntil<R>(work: Promise<R> | (() => Promise<R>)): Promise<R> {
    const running = this.run();
    const stopped = running.then(() => {
      throw new Error('the worker stopped before the work it ran for settled');
    });
    stopped.catch(() => {});
    try {
      return await Promise.race([typeof work === 'function' ? work() : work, stopped]);
    } finally {
      this.shutdown();
      await running.catch(() => {});
    }
  }
}

/** The workflow code, bundled once for a process's workers (seconds of CPU at start). */
export function bundleWorkflows(): Promise<WorkflowBundle> {
  return bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: Runtime.instance().logger });
}

export async function createQuireWorker(deps: QuireWorkerDeps): Promise<QuireWorker> {
  const identity = deps.identity ?? workerIdentity();
  // D1: a worker that finds it does not hold the installation's key stops polling at once
  // (its running activities finish); the process says why and exits 78 (worker/main.ts).
  let worker: QuireWorker | undefined;
  const stopOnKeyMismatch = () => {
    deps.onFleetKeyMismatch?.();
    worker?.shutdown();
  };
  const pagesInHand = new PagesInHand();
  const heartbeatEveryMs = Math.max(200, Math.floor(deps.config.QUIRE_HEARTBEAT_TIMEOUT_MS / 3));
  const transcription = createTranscriptionActivities({
    pagesInHand,
    pool: deps.pool,
    providers: deps.providers,
    secretKey: deps.config.QUIRE_SECRET_KEY,
    openingKeys: deps.config.QUIRE_SECRET_KEYS,
    owner: identity,
    // D3, D7: an object store outage makes the job wait, heartbeating even while a call is
    // held by a store that stopped answering, not spend attempts.
    resolveMedia: (key) => {
      const context = Context.current();
      return localPathWhenAvailable(deps.blobStore, key, {
        onWait: () => context.heartbeat({ waiting: 'blob_store', at: Date.now() }),
        signal: context.cancellationSignal,
        beatEveryMs: heartbeatEveryMs,
      });
    },
    logger: deps.logger,
    heartbeatEveryMs,
    infraWaitMs: deps.config.QUIRE_INFRA_WAIT_MS,
    audioPollMs: deps.audioPollMs,
    onProviderPaused: deps.onProviderPaused,
    now: deps.now,
    onFleetKeyMismatch: stopOnKeyMismatch,
    // D8: a worker whose blob store is not the fleet's stops taking work the same way.
    onConfigurationFault: (setting) => {
      deps.onConfigurationFault?.(setting);
      worker?.shutdown();
    },
  });
  const workflowBundle = deps.workflowBundle ?? (await bundleWorkflows());
  const activitySlots = deps.config.WORKER_CONCURRENCY;
  const workflowSlots = workflowTaskSlots(activitySlots);
  const onQueue = (
    taskQueue: string,
    workflowTaskSlotSupplier: TunerHolder['workflowTaskSlotSupplier'],
  ) =>
    Worker.create({
      connection: deps.connection,
      namespace: deps.config.TEMPORAL_NAMESPACE,
      taskQueue,
      identity,
      workflowBundle,
      activities: transcription,
      sinks: quireSinks(pagesInHand),
      tuner: {
        workflowTaskSlotSupplier,
        activityTaskSlotSupplier: { type: 'fixed-size', numSlots: activitySlots },
        localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: LOCAL_ACTIVITY_SLOTS },
        nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
      },
      // As many polls as slots, at most 10, as the SDK sets them for its fixed slots.
      workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: Math.min(10, workflowSlots) },
      activityTaskPollerBehavior: { type: 'simple-maximum', maximum: Math.min(10, activitySlots) },
      shutdownGraceTime: deps.config.QUIRE_SHUTDOWN_GRACE_MS,
      // A SIGKILLed worker's cached workflows move to a live worker after this (T3 recovery).
      stickyQueueScheduleToStartTimeout: deps.config.QUIRE_STICKY_TIMEOUT_MS,
      // Heartbeats must reach the server well inside the heartbeat timeout.
      maxHeartbeatThrottleInterval: Math.max(
        100,
        Math.floor(deps.config.QUIRE_HEARTBEAT_TIMEOUT_MS / 4),
      ),
    });
  // M5: the bulk worker takes a new page only while it has fewer than its bound in hand; the
  // interactive worker takes a person's page whenever it has a slot (P8).
  const bulk = await onQueue(
    deps.config.QUIRE_TASK_QUEUE,
    new WorkflowTaskSlots(workflowSlots, pagesInHand, pageBound(activitySlots)),
  );
  const interactive = await onQueue(interactiveTaskQueue(deps.config.QUIRE_TASK_QUEUE), {
    type: 'fixed-size',
    numSlots: workflowSlots,
  });
  worker = new QuireWorker(bulk, interactive, pagesInHand);
  return worker;
}

/**
 * The maintenance worker (O3): the scheduled workflows and their activities on their own task
 * queue, so a cleanup never waits for a slot behind page recognition. Same workflow bundle
 * as the transcription worker; only the queue and the activities differ.
 */
export async function createMaintenanceWorker(
  deps: Omit<QuireWorkerDeps, 'logger' | 'audioPollMs' | 'onProviderPaused' | 'now'>,
): Promise<Worker> {
  return Worker.create({
    connection: deps.connection,
    namespace: deps.config.TEMPORAL_NAMESPACE,
    taskQueue: deps.config.QUIRE_MAINTENANCE_TASK_QUEUE,
    identity: deps.identity ?? workerIdentity(),
    ...(deps.workflowBundle
      ? { workflowBundle: deps.workflowBundle }
      : { workflowsPath: WORKFLOWS_PATH }),
    activities: createMaintenanceActivities({
      pool: deps.pool,
      blobStore: deps.blobStore,
      providers: deps.providers,
      client: deps.client,
      eventRetentionDays: deps.config.QUIRE_EVENT_RETENTION_DAYS,
      providerCallRetentionDays: deps.config.QUIRE_PROVIDER_CALL_RETENTION_DAYS,
      globalQuotaBytes: deps.config.QUIRE_GLOBAL_QUOTA_BYTES ?? null,
    }),
    // One slot per schedule: each schedule skips a run while its previous one is running.
    maxConcurrentActivityTaskExecutions: maintenanceSchedules(deps.config).length,
    shutdownGraceTime: deps.config.QUIRE_SHUTDOWN_GRACE_MS,
  });
}

/**
 * Runs workers side by side in one process: when one stops (shutdown or failure), the others
 * are shut down too, and the first failure is rethrown once all have drained.
 */
export async function runWorkers(workers: readonly Worker[]): Promise<void> {
  const runs = workers.map((w) => w.run());
  const stopAll = () => shutdownRunning(workers);
  for (const run of runs) run.then(stopAll, stopAll);
  const settled = await Promise.allSettled(runs);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
}

function shutdownRunning(workers: readonly Worker[]): void {
  for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
}

/** The typed client as Quire's own processes build it from configuration. */
export function createQuireClient(
  config: QuireConfig,
  temporal: Client,
  pool: Pool,
  providers: string[],
): QuireClient {
  const jobs = createJobStore(pool, {
    fleetMaxOpenWorkflows: config.QUIRE_FLEET_MAX_OPEN_WORKFLOWS,
  });
  return QuireClient.fromConfig(config, temporal, jobs, providers);
}

/**
 * R4: the worker's native connection (D2's settings, uncompressed): where the frontend checks
 * callers it sends the token of Quire's client and takes each refreshed one.
 */
export async function connectWorkerTemporal(
  config: QuireConfig,
  token: TemporalToken | undefined,
  logger: Logger,
): Promise<NativeConnection> {
  const connection = await NativeConnection.connect(
    workerConnectionOptions(config, token?.current()),
  );
  token?.onRefresh((fresh) => {
    connection.setApiKey(fresh).catch(() => {
      logger.warn({}, 'could not hand the refreshed Temporal token to the worker connection');
    });
  });
  return connection;
}

export async function connectTemporalClient(
  config: QuireConfig,
  token?: TemporalToken,
): Promise<Client> {
  const connection = await connectTemporal(config, { token });
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
}
