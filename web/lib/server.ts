import 'server-only';
import { QuireClient } from '@quire/client';
import { loadConfig, type QuireConfig } from '@quire/core/config';
import type { EngineModel } from '@quire/core/engineModels';
import { DomainError } from '@quire/core/errors';
import { createJobStore } from '@quire/db/jobStore';
import { createPool, type Pool, poolTimeoutsFrom } from '@quire/db/pool';
import { connectTemporal } from '@quire/net/temporalClient';
import { installedModels } from '@quire/providers/installedModels';
import { Client } from '@temporalio/client';

/**
 * Process-wide handles of the web app: one Postgres pool and one Temporal client per
 * process, created lazily. Web replicas are stateless; everything durable is in Postgres.
 */
const globals = globalThis as unknown as {
  quireConfig?: QuireConfig;
  quirePool?: Pool;
  quireTemporal?: Promise<Client>;
  quireClient?: Promise<QuireClient>;
  quireModels?: { models: EngineModel[]; at: number };
};

/**
 * Hands the web app its configuration (tests; an embedding server). The handles below are
 * made from it at first use, so configure before the first request. Unconfigured, the
 * process environment is read once, through core/config.
 */
export function configureWeb(settings: QuireConfig): void {
  globals.quireConfig = settings;
}

export function config(): QuireConfig {
  globals.quireConfig ??= loadConfig();
  return globals.quireConfig;
}

/** How long the list of installed models is kept before the directories are read again. */
const MODELS_TTL_MS = 60_000;

/**
 * V9: the models this machine has (the web runs the workers' image), read from their
 * directories at most once a minute, so a model an operator installs is offered soon after.
 */
export function engineModels(): EngineModel[] {
  const cached = globals.quireModels;
  if (cached && Date.now() - cached.at < MODELS_TTL_MS) return cached.models;
  const models = installedModels(config());
  globals.quireModels = { models, at: Date.now() };
  return models;
}

export function pool(): Pool {
  globals.quirePool ??= createPool(
    config().DATABASE_URL,
    config().DATABASE_POOL_SIZE,
    poolTimeoutsFrom(config()),
  );
  return globals.quirePool;
}

export function temporal(): Promise<Client> {
  globals.quireTemporal ??= connectTemporal(config(), { connectTimeout: 5_000 })
    .then((connection) => new Client({ connection, namespace: config().TEMPORAL_NAMESPACE }))
    .catch((error) => {
      globals.quireTemporal = undefined;
      throw error;
    });
  return globals.quireTemporal;
}

export function quireClient(): Promise<QuireClient> {
  globals.quireClient ??= temporal()
    .then((t) =>
      QuireClient.fromConfig(
        config(),
        t,
        createJobStore(pool(), {
          fleetMaxOpenWorkflows: config().QUIRE_FLEET_MAX_OPEN_WORKFLOWS,
        }),
        undefined,
        engineModels,
      ),
    )
    .catch((error) => {
      globals.quireClient = undefined;
      throw error;
    });
  return globals.quireClient;
}

/** The typed client, or a `temporal_unavailable` refusal when Temporal does not answer. */
export function availableQuireClient(): Promise<QuireClient> {
  return quireClient().catch(() => {
    throw new DomainError(
      'temporal_unavailable',
      'the workflow service does not answer; try again',
    );
  });
}
