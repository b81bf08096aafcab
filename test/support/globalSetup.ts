import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { migrate } from '../../db/migrate';
import { ensurePostgres } from '../../scripts/lib/postgres';
import { findOrBuildTemporal, startDevServer, type DevServer } from '../../scripts/lib/temporal';
import { ADMIN_URL, databaseUrl, TEMPLATE_DB } from './db';

/**
 * Once per run: Postgres up, a migrated template database that each test file clones, and
 * one real Temporal dev server (in memory, headless) that every test shares, each test on
 * its own task queue.
 */
let server: DevServer | undefined;

export default async function setup({ provide }: { provide: (key: string, value: unknown) => void }) {
  await ensurePostgres(ADMIN_URL);
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  await migrate(databaseUrl(TEMPLATE_DB));

  let address = process.env.QUIRE_TEST_TEMPORAL_ADDRESS;
  if (!address) {
    const binary = findOrBuildTemporal();
    const port = Number(process.env.QUIRE_TEST_TEMPORAL_PORT ?? 7299);
    server = await startDevServer(binary, { port, headless: true, logFile: '.data/test-temporal.log' });
    address = server.address;
  }
  process.env.QUIRE_TEST_TEMPORAL_ADDRESS = address;
  provide('temporalAddress', address);
  writeFileSync('.data/test-temporal-address', address);

  return async () => {
    await server?.stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
  }
}
