import { spawnSync } from 'node:child_process';
import { ensurePostgres } from './lib/postgres';
import { findOrBuildTemporal } from './lib/temporal';

/**
 * `npm test`: every test, against real PostgreSQL and a real Temporal dev server. The
 * Temporal CLI is found or built here, before the test runner's own time limits apply
 * (the first build takes minutes); the runner's global setup then starts the server.
 */
const adminUrl = process.env.QUIRE_TEST_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
await ensurePostgres(adminUrl);
const temporal = findOrBuildTemporal((line) => process.stderr.write(`quire: ${line}\n`));
const result = spawnSync(
  process.execPath,
  ['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)],
  {
    stdio: 'inherit',
    env: { ...process.env, QUIRE_TEMPORAL_BIN: temporal },
  },
);
process.exit(result.status ?? 1);
