import { resolve } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createBlobStore, fleetSettings } from '../blobs/fromConfig';
import { loadConfig, requireSecretKeys } from '../core/config';
import { redactError } from '../core/redact';
import { interactiveTaskQueue } from '../core/temporal';
import { checkInstallationKey, installationKeyHeld } from '../db/installationKey';
import { checkInstallationSettings } from '../db/installationSettings';
import { migrate } from '../db/migrate';
import { ensureTimePartitions } from '../db/partitions';
import { createPool, poolTimeoutsFrom } from '../db/pool';
import { startTemporalToken } from '../net/temporalToken';
import {
  bundleWorkflows,
  connectTemporalClient,
  connectWorkerTemporal,
  createMaintenanceWorker,
  createQuireClient,
  createQuireWorker,
  createWorkerProviders,
  runWorkers,
  workerIdentity,
} from './createWorker';
import { checkAndRecordHealth, readHealth } from './health';
import { createLogger } from './logger';
import { deliverMirrorOutbox } from './mirrorRelay';
import { notifyPauseOnce } from './notify';
import { ensureSchedules } from './schedules';
import { createSlotDispatcher } from './slotDispatcher';
import { createWebhookRelay } from './webhookRelay';

/**
 * The worker process: Temporal workflows and activities, schedules, and the health
 * heartbeat. No HTTP server. SIGTERM stops polling and drains running activities within
 * QUIRE_SHUTDOWN_GRACE_MS; work cut off resumes from its checkpoint on another worker.
 */
async function main(): Promise<number> {
  // The one read of the environment; everything below is handed its settings.
  const config = loadConfig();
  if (process.argv[2] === 'health') {
    const health = await readHealth(config.QUIRE_HEALTH_FILE, config.QUIRE_HEALTH_MAX_AGE_MS);
    process.stdout.write(`${JSON.stringify(health)}\n`);
    return health.healthy ? 0 : 1;
  }

  const logger = createLogger('quire-worker', config.LOG_LEVEL);
  // D1: no key, no start: there is no built-in key to fall back on.
  const keys = requireSecretKeys(config);
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    shutdownSignals: ['SIGINT', 'SIGTERM', 'SIGQUIT'],
  });

  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE, poolTimeoutsFrom(config));
  await migrate(config.DATABASE_URL);
  // D1: a worker sealing with another key than the fleet's would make every token it seals
  // unreadable to the others: refuse to start, before polling any task.
  const keyCheck = await checkInstallationKey(pool, keys);
  if (!keyCheck.ok) {
    await pool.end().catch(() => {});
    throw new FleetConfigError(keyCheck.message);
  }
  // D8: the blob store and the other settings the fleet shares are the first process's.
  const settingsCheck = await checkInstallationSettings(pool, fleetSettings(config));
  if (!settingsCheck.ok) {
    await pool.end().catch(() => {});
    throw new FleetConfigError(settingsCheck.message);
  }
  logger.info(
    {
      keyFingerprint: keyCheck.fingerprint.slice(0, 12),
      keyCheck: keyCheck.state,
      keySource: config.secretKeySource,
    },
    'secret key matches the installation',
  );
  // R4: where the frontend checks callers, both connections send the token of Quire's client
  // and take each refreshed one; a client the provider refuses stops the worker here.
  const token = await startTemporalToken(config, { logger });
  const connection = await connectWorkerTemporal(config, token, logger);
  const temporal = await connectTemporalClient(config, token);
  // The offline engines are the defaults (Q2); the simulated one serves fault injection;
  // remote engines are registered when configured (QUIRE_OPENAI_BASE_URL, ...).
  const providers = createWorkerProviders(config);
  providers.warm();
  const client = createQuireClient(config, temporal, pool, providers.names());
  const identity = workerIdentity();
  const blobStore = createBlobStore(config);
  // U1: only Quire's own temporaries older than an hour; never recent ones, links or dirs.
  const swept = await blobStore.sweepStaleTemporaries();
  // D11: the months events and provider calls are written into exist before any commit needs
  // them, from the start and not only after the first daily maintenance pass. A lock held
  // elsewhere leaves it to that pass (a year is kept ready).
  await ensureTimePartitions(pool).catch((error) =>
    logger.warn(
      { component: 'partitions', error: redactError(error) },
      'time partitions not prepared at start; the maintenance pass prepares them',
    ),
  );

  const workerDeps = {
    config,
    pool,
    providers,
    connection,
    client,
    identity,
    blobStore,
    workflowBundle: config.QUIRE_WORKFLOW_BUNDLE
      ? { codePath: resolve(config.QUIRE_WORKFLOW_BUNDLE) }
      : await bundleWorkflows(),
  };
  let keyMismatch = false;
  let configurationFault: string | undefined;
  const worker = await createQuireWorker({
    ...workerDeps,
    logger,
    onFleetKeyMismatch: () => {
      keyMismatch = true;
    },
    onConfigurationFault: (setting) => {
      configurationFault = setting;
    },
    onProviderPaused: async (pause) => {
      await notifyPauseOnce(pool, { url: config.QUIRE_NOTIFY_URL, ...pause });
    },
  });
  const maintenanceWorker = await createMaintenanceWorker(workerDeps);
  await ensureSchedules(temporal, config);
  // E1/W2: the outbox relay fans committed events out to webhook deliveries and sends them.
  const relay = createWebhookRelay({
    pool,
    secretKey: config.QUIRE_SECRET_KEY,
    openingKeys: keys,
    logger,
    databaseUrl: config.DATABASE_URL,
    allowHosts: config.QUIRE_WEBHOOK_ALLOW_HOSTS,
  });
  await relay.start();
  // M4, D14: jobs waiting under a workspace's active-job cap, or the installation's pace of
  // bulk jobs, start, oldest first, as slots free.
  const dispatcher = createSlotDispatcher({
    pool,
    client,
    logger,
    databaseUrl: config.DATABASE_URL,
  });
  await dispatcher.start();
  // E3: published snapshots are PUT to the mirror; the rows are revision-fenced and leased,
  // so any number of workers may run this pass.
  let mirrorPass: Promise<unknown> = Promise.resolve();
  const mirrorTimer = config.QUIRE_MIRROR_URL
    ? setInterval(() => {
        mirrorPass = deliverMirrorOutbox({
          pool,
          mirrorUrl: config.QUIRE_MIRROR_URL,
          allowHosts: config.QUIRE_WEBHOOK_ALLOW_HOSTS,
        }).catch((error) => logger.warn({ error: redactError(error) }, 'mirror pass failed'));
      }, 2_000)
    : undefined;

  const beat = () =>
    checkAndRecordHealth({
      pool,
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.QUIRE_TASK_QUEUE,
      identity,
      file: config.QUIRE_HEALTH_FILE,
      // D1: a key rotated away from under this worker turns its health red.
      keyHeld: async () => (await installationKeyHeld(pool, keys)) === true,
    });
  const healthTimer = setInterval(beat, 5_000);
  setTimeout(beat, 1_000);

  logger.info(
    {
      identity,
      taskQueue: config.QUIRE_TASK_QUEUE,
      interactiveTaskQueue: interactiveTaskQueue(config.QUIRE_TASK_QUEUE),
      maintenanceTaskQueue: config.QUIRE_MAINTENANCE_TASK_QUEUE,
      concurrency: config.WORKER_CONCURRENCY,
      staleTemporariesRemoved: swept.removed,
    },
    'worker started',
  );
  try {
    await runWorkers([...worker.workers, maintenanceWorker]);
  } finally {
    clearInterval(healthTimer);
    if (mirrorTimer) clearInterval(mirrorTimer);
    await mirrorPass;
    await dispatcher.stop().catch(() => {});
    await relay.stop({ graceMs: Math.min(config.QUIRE_SHUTDOWN_GRACE_MS, 15_000) }).catch(() => {});
    await providers.close();
    logger.info({ identity }, 'worker stopped');
    await temporal.connection.close().catch(() => {});
    await connection.close().catch(() => {});
    token?.close();
    await pool.end().catch(() => {});
  }
  if (configurationFault) {
    throw new FleetConfigError(
      `an object this installation wrote is missing from this worker's blob store: ${configurationFault} is not the fleet's; the worker stopped`,
    );
  }
  if (keyMismatch) {
    throw new FleetConfigError(
      "QUIRE_SECRET_KEY is no longer among this installation's keys (rotated away, or another installation's): the worker stopped",
    );
  }
  return 0;
}

/**
 * D1/D8: this process's key or shared settings are not the installation's; exit status 78
 * (configuration error).
 */
class FleetConfigError extends Error {
  override name = 'FleetConfigError';
}

main().then(
  (code) => process.exit(code),
  (error) => {
    const fleet = error instanceof FleetConfigError;
    const message = fleet || error?.name === 'ConfigError' ? error.message : redactError(error);
    process.stderr.write(
      `${JSON.stringify({ level: 'fatal', msg: 'worker failed', error: message })}\n`,
    );
    if (fleet || error?.name === 'ConfigError') process.stderr.write(`quire-worker: ${message}\n`);
    process.exit(fleet ? 78 : 1);
  },
);
