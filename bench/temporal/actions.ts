import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../test/support/fixtures';
import { createTestQuire } from '../../test/support/quire';
import { type PagePath, pageActions } from '../lib/pageActions';
import { startBenchStack } from '../lib/stack';

/**
 * bench/temporal/actions (D14): the billable Temporal actions a page costs, as Temporal Cloud
 * counts them, from the histories of Quire's own workflow (`transcriptionJob`) run by a real
 * Quire worker with the simulated engine on a private stack (bench/lib/stack.ts: the CLI dev
 * server, a fresh database). Each path's BENCH_PAGES pages (5) run one after another; their
 * histories are counted (bench/lib/billableActions.ts), and the heartbeats and queries the
 * server answered meanwhile added (bench/lib/pageActions.ts). The figures are counts, not
 * timings: the machine's load does not move them. Prints JSON, kept in
 * bench/temporal/last-run-actions.json. (bench/temporal/run.ts measures CPU a page instead.)
 */
const PAGES = Number(process.env.BENCH_PAGES ?? 5);

const PATHS: Record<string, PagePath & { what: string }> = {
  readOnce: {
    what: 'an image page read in one pass, as the tesseract engines read (P1): the common path',
    kind: 'image',
    simulated: { lines: 30, readPages: true },
  },
  byLine: {
    what: 'an image page read line by line, as remote vision engines read',
    kind: 'image',
    simulated: { lines: 30 },
  },
  audio: { what: 'a recording of 4 spans', kind: 'audio', simulated: { audioSegments: 4 } },
  retryThenComplete: {
    what: 'an image page whose first attempt times out (a charged retry, J3)',
    kind: 'image',
    simulated: { lines: 3, faults: [{ op: 'recognize', category: 'timeout', attempts: [1] }] },
  },
};

const stack = await startBenchStack(10);
const db = { name: 'bench', url: stack.databaseUrl, pool: stack.pool, drop: () => stack.close() };
// Heartbeats as a deployment has them (60 s), not the tests' 3 s.
const quire = await createTestQuire({ QUIRE_HEARTBEAT_TIMEOUT_MS: '60000' }, undefined, {
  db,
  temporalAddress: stack.temporalAddress,
});
try {
  const ws = await quire.workspace('actions');
  const worker = await quire.newWorker('actions');
  const paths = await worker.runUntil(async () => {
    const measured: Record<string, unknown> = {};
    for (const [name, { what, ...path }] of Object.entries(PATHS)) {
      measured[name] = {
        what,
        ...(await pageActions(quire, ws, stack.temporalMetricsUrl, path, PAGES)),
      };
      process.stderr.write(`bench: ${name}: ${JSON.stringify(measured[name])}\n`);
    }
    return measured;
  });
  const report = {
    bench: 'temporal-actions',
    topology: 'one Quire worker (simulated engine) on the CLI dev server, pages one at a time',
    counted:
      'Temporal Cloud actions (docs.temporal.io/cloud/actions): from each history, plus heartbeats and queries from the server',
    machine: { cores: cpus().length, loadAverage1m: Math.round(loadavg()[0]! * 100) / 100 },
    pagesPerPath: PAGES,
    paths,
  };
  const out = JSON.stringify(report, null, 2);
  writeFileSync(path.join(REPO_ROOT, 'bench/temporal/last-run-actions.json'), `${out}\n`);
  process.stdout.write(`${out}\n`);
} finally {
  await quire.close();
}
// The SDK's runtime keeps the event loop alive once all is done.
process.exit(0);
