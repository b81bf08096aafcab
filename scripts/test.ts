import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { findOrBuild } from './lib/goBuilds';
import { ensurePostgres } from './lib/postgres';
import { findOrBuildTemporal } from './lib/temporal';
import { ensureWebBuild } from './lib/webBuild';

/**
 * `npm test`: every test, against real PostgreSQL and a real Temporal dev server. The
 * Temporal CLI is found or built here, before the test runner's own time limits apply
 * (the first build takes minutes); the runner's global setup then starts the server.
 * The last line is the plain count CI reads: `tests: N passed, N failed`.
 */
const adminUrl = process.env.QUIRE_TEST_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
await ensurePostgres(adminUrl);
const say = (line: string) => process.stderr.write(`quire: ${line}\n`);
const temporal = findOrBuildTemporal(say);
// The cluster tests (D2/D3/D5) run the production topology, and the sign-in tests (R2, R4) an
// identity provider (Ory Hydra), and the mail tests (R9) an SMTP sink (Mailpit): their programs are built here,
// once per machine, before the runner's time limits apply.
for (const program of [
  'temporalServer',
  'temporalUi',
  'objectServer',
  'hydra',
  'mailSink',
] as const) {
  findOrBuild(program, say);
}
mkdirSync('.data', { recursive: true });
// The browser and cluster tests serve the console's production build: one build for the whole
// run (rebuilt only when web sources change), instead of one per test file.
const webDist = process.env.QUIRE_TEST_WEB_DIST ?? '.next-cluster';
await ensureWebBuild(process.cwd(), webDist, say, '.data/next-test-build.log');
const results = '.data/test-results.json';
rmSync(results, { force: true });
const run = spawnSync(
  process.execPath,
  [
    'node_modules/vitest/vitest.mjs',
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${results}`,
    ...process.argv.slice(2),
  ],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      QUIRE_TEMPORAL_BIN: temporal,
      QUIRE_TEST_WEB_DIST: webDist,
      QUIRE_TEST_CLUSTER_WEB_DIST: webDist,
    },
  },
);
if (existsSync(results)) {
  const summary = JSON.parse(readFileSync(results, 'utf8')) as {
    numPassedTests: number;
    numFailedTests: number;
    numTotalTests: number;
  };
  process.stdout.write(
    `tests: ${summary.numPassedTests} passed, ${summary.numFailedTests} failed\n`,
  );
  if (summary.numTotalTests === 0) process.exit(1);
}
process.exit(run.status ?? 1);
