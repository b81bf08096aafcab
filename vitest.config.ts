import { defineConfig } from 'vitest/config';

/**
 * Projects: `unit` (pure, fast), `workflow` (the real workflow bundle on a real Temporal dev
 * server, its activities mocked in memory: no database), `integration` (real Postgres and a
 * real Temporal dev server, started once by the global setup), `cluster` (the production
 * topology), `e2e` (a real browser). `chaos` tests kill processes and live beside integration
 * tests under test/chaos. `npm run test:fast` is the inner loop: unit and workflow.
 */
// web/ modules import `server-only`, which only resolves inside Next; tests load them directly.
// `@quire/*` is the repository root, as in tsconfig.json's `paths` (web/ imports use it).
const resolve = {
  alias: [
    {
      find: 'server-only',
      replacement: new URL('./test/support/serverOnly.ts', import.meta.url).pathname,
    },
    { find: /^@quire\//, replacement: new URL('./', import.meta.url).pathname },
  ],
};

export default defineConfig({
  resolve,
  test: {
    pool: 'forks',
    projects: [
      {
        resolve,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          sequence: { groupOrder: 0 },
          pool: 'forks',
        },
      },
      {
        resolve,
        test: {
          name: 'workflow',
          include: ['test/workflow/**/*.test.ts'],
          sequence: { groupOrder: 0 },
          pool: 'forks',
          globalSetup: ['test/support/workflowSetup.ts'],
          setupFiles: ['test/support/workflowSetupFile.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        resolve,
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 },
          include: ['test/integration/**/*.test.ts', 'test/chaos/**/*.test.ts'],
          pool: 'forks',
          globalSetup: ['test/support/globalSetup.ts'],
          setupFiles: ['test/support/setupFile.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          maxWorkers: 2,
        },
      },
      {
        // D2/D3/D5: the production topology (own PostgreSQL, Temporal server, object server,
        // workers, web replicas); one file at a time, each sharing one cluster across its tests.
        resolve,
        test: {
          name: 'cluster',
          sequence: { groupOrder: 3 },
          include: ['test/cluster/**/*.test.ts'],
          pool: 'forks',
          globalSetup: ['test/support/globalSetup.ts'],
          testTimeout: 300_000,
          hookTimeout: 900_000,
          fileParallelism: false,
        },
      },
      {
        resolve,
        test: {
          name: 'e2e',
          sequence: { groupOrder: 2 },
          include: ['test/e2e/**/*.test.ts'],
          pool: 'forks',
          globalSetup: ['test/support/globalSetup.ts'],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          // A browser waits on server actions and workflows; on a loaded machine they take
          // longer than expect.poll's 1 s default.
          expect: { poll: { timeout: 15_000 } },
          fileParallelism: false,
        },
      },
    ],
  },
});
