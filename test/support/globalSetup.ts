import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
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
let server: DevServer | undefined;

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
  // Workflows are bundled once per run; every test worker loads the same bundle.
  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger });
  const bundlePath = `.data/workflow-bundle-${process.pid}.js`;
  writeFileSync(bundlePath, bundle.code);
  process.env.QUIRE_TEST_WORKFLOW_BUNDLE = bundlePath;
  writeFileSync(`.data/test-run-${process.pid}.json`, JSON.stringify({ address, template }));

  return async () => {
    rmSync(bundlePath, { force: true });
    await server?.stop();
    const cleanup = new pg.Client({ connectionString: ADMIN_URL });
    await cleanup.connect();
    try {
      await cleanup.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    } finally {
      await cleanup.end();
    }
  };
}

const quietLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};
