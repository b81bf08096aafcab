import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { bundleWorkflowCode } from '@temporalio/worker';
import pg from 'pg';
import { migrate } from '../../db/migrate';
import { ensurePostgres } from '../../scripts/lib/postgres';
import { type DevServer, findOrBuildTemporal, startDevServer } from '../../scripts/lib/temporal';
import { WORKFLOWS_PATH } from '../../worker/createWorker';
import { ADMIN_URL, databaseUrl } from './db';

/**
 * Once per run: Postgres up, a migrated template database that each test file clones, and
 * one real Temporal dev server (in memory, headless) that every test shares, each test on
 * its own task queue. Names and ports are per run, so two runs on one machine do not collide.
 * Test files read what is set here from the environment they inherit.
 */
export default async function setup() {
  await ensurePostgres(ADMIN_URL);
  const template = `quire_tpl_${process.pid}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${template}`);
  } finally {
    await admin.end();
  }
  await migrate(databaseUrl(template));
  process.env.QUIRE_TEST_TEMPLATE_DB = template;

  const temporal = await startSharedTemporal();
  const bundle = await bundleWorkflows();
  writeFileSync(
    `.data/test-run-${process.pid}.json`,
    JSON.stringify({ address: temporal.address, template }),
  );

  return async () => {
    bundle.remove();
    await temporal.stop();
    const cleanup = new pg.Client({ connectionString: ADMIN_URL });
    await cleanup.connect();
    try {
      await cleanup.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    } finally {
      await cleanup.end();
    }
  };
}

/**
 * The run's Temporal dev server: started here unless a setup of this run (or the caller, in
 * QUIRE_TEST_TEMPORAL_ADDRESS) already has one; stopped only by the setup that started it.
 */
export async function startSharedTemporal(): Promise<{ address: string; stop(): Promise<void> }> {
  let server: DevServer | undefined;
  let address = process.env.QUIRE_TEST_TEMPORAL_ADDRESS;
  if (!address) {
    const binary = findOrBuildTemporal();
    mkdirSync('.data', { recursive: true });
    server = await startDevServer(binary, {
      headless: true,
      logFile: `.data/test-temporal-${process.pid}.log`,
    });
    address = server.address;
    process.env.QUIRE_TEST_TEMPORAL_ADDRESS = address;
  }
  process.env.QUIRE_TEMPORAL_BIN_RESOLVED = findOrBuildTemporal();
  return { address, stop: async () => server?.stop() };
}

/** Workflows are bundled once per run; every test worker loads the same bundle. */
export async function bundleWorkflows(): Promise<{ remove(): void }> {
  const bundlePath = `.data/workflow-bundle-${process.pid}.js`;
  // Another project's setup of this run bundled the same code already.
  if (process.env.QUIRE_TEST_WORKFLOW_BUNDLE === bundlePath && existsSync(bundlePath))
    return { remove: () => rmSync(bundlePath, { force: true }) };
  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger });
  mkdirSync('.data', { recursive: true });
  writeFileSync(bundlePath, bundle.code);
  process.env.QUIRE_TEST_WORKFLOW_BUNDLE = bundlePath;
  return { remove: () => rmSync(bundlePath, { force: true }) };
}

const quietLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};
