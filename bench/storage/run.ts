import { readFile } from 'node:fs/promises';
import type { Pool } from '../../db/pool';
import { createEngines } from '../../providers/catalogue';
import { createProviderRegistry } from '../../providers/registry';
import { CHECKPOINT_LOG, logCheckpointWrites } from '../../test/support/checkpointLog';
import { MANIFESTO_PAGE } from '../../test/support/fixtures';
import { ingestWithJobs } from '../../test/support/ingest';
import { createTestQuire, testConfig } from '../../test/support/quire';
import { round, startBenchStack } from '../lib/stack';

/**
 * bench/storage (D11): what a page costs in Quire's PostgreSQL database, on real OCR: the
 * manifesto scan (test/fixtures/real) uploaded BENCH_PAGES times (20) in one batch and read
 * by the tesseract engine the worker picks (`auto`), on a private stack (bench/lib/stack.ts).
 * Every table of Quire's schema is measured before the batch and after it, both after VACUUM:
 * its bytes on disk (heap, indexes, TOAST) and its live rows' bytes (no page or index
 * overhead), per page. A copy of every checkpoint row as it was written is kept aside (not
 * counted) to report what the checkpoints weighed on the way, beside what is left of them.
 * Prints JSON.
 */
const PAGES = Number(process.env.BENCH_PAGES ?? 20);

interface TableSize {
  table: string;
  bytes: number;
  liveBytes: number;
  rows: number;
}

async function tableSizes(pool: Pool): Promise<Map<string, TableSize>> {
  await pool.query('VACUUM');
  // A time-partitioned table (D11) counts as one, its partitions summed: the rows are read
  // through the parent and the bytes are every partition's.
  const { rows: tables } = await pool.query<{ table: string; bytes: number }>(
    `SELECT c.relname AS table,
            CASE WHEN c.relkind = 'p'
                 THEN (SELECT coalesce(sum(pg_total_relation_size(p.relid)), 0)
                         FROM pg_partition_tree(c.oid) p)
                 ELSE pg_total_relation_size(c.oid) END::bigint AS bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition`,
  );
  const sizes = new Map<string, TableSize>();
  for (const { table, bytes } of tables) {
    // Names from the catalogue, quoted as identifiers.
    const { rows } = await pool.query<{ rows: number; live: number }>(
      `SELECT count(*)::int AS rows, coalesce(sum(pg_column_size(t.*)), 0)::bigint AS live
         FROM ${quoteIdent(table)} t`,
    );
    sizes.set(table, { table, bytes, liveBytes: rows[0]!.live, rows: rows[0]!.rows });
  }
  return sizes;
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

const overrides = { QUIRE_DEFAULT_PROVIDER: 'auto', QUIRE_HEARTBEAT_TIMEOUT_MS: '60000' };
const stack = await startBenchStack();
const db = { name: 'bench', url: stack.databaseUrl, pool: stack.pool, drop: () => stack.close() };
const providers = createProviderRegistry(createEngines(testConfig(overrides)));
const quire = await createTestQuire(overrides, providers, {
  db,
  temporalAddress: stack.temporalAddress,
});
try {
  const ws = await quire.workspace('storage');
  await logCheckpointWrites(stack.pool);
  const worker = await quire.newWorker('storage');
  const running = worker.run();
  const before = await tableSizes(stack.pool);

  const scan = await readFile(MANIFESTO_PAGE);
  const form = new FormData();
  for (let i = 0; i < PAGES; i++)
    form.append('files[]', new Blob([scan], { type: 'image/png' }), `manifesto-${i}.png`);
  const started = Date.now();
  const { records } = await ingestWithJobs(quire, ws, form);
  const outcomes = await Promise.all(
    records.map((r) => quire.temporal.workflow.getHandle(r.workflowId).result()),
  );
  const seconds = (Date.now() - started) / 1000;
  worker.shutdown();
  await running;

  const after = await tableSizes(stack.pool);
  const { rows: jobs } = await stack.pool.query(
    `SELECT provider, avg(total_segments)::float AS lines, count(*)::int AS n
       FROM transcription_jobs GROUP BY provider`,
  );
  const perPage = (n: number) => round(n / PAGES, 1);
  const tables = [...after.values()]
    .filter((t) => t.table !== CHECKPOINT_LOG)
    .map((t) => {
      const was = before.get(t.table) ?? { bytes: 0, liveBytes: 0, rows: 0 };
      return {
        table: t.table,
        bytesPerPage: perPage(t.bytes - was.bytes),
        liveBytesPerPage: perPage(t.liveBytes - was.liveBytes),
        rowsPerPage: perPage(t.rows - was.rows),
      };
    })
    .filter((t) => t.bytesPerPage !== 0 || t.rowsPerPage !== 0)
    .sort((a, b) => b.bytesPerPage - a.bytesPerPage);
  const sum = (key: 'bytesPerPage' | 'liveBytesPerPage') =>
    round(
      tables.reduce((s, t) => s + t[key], 0),
      1,
    );
  const written = after.get(CHECKPOINT_LOG)!;
  const left = after.get('job_checkpoints')!;
  const result = {
    bench: 'storage',
    pages: PAGES,
    statuses: outcomes.reduce<Record<string, number>>((acc, o) => {
      acc[o.status] = (acc[o.status] ?? 0) + 1;
      return acc;
    }, {}),
    engines: jobs,
    seconds: round(seconds, 1),
    bytesPerPage: sum('bytesPerPage'),
    liveBytesPerPage: sum('liveBytesPerPage'),
    checkpoints: {
      rowsWrittenPerPage: perPage(written.rows),
      liveBytesWrittenPerPage: perPage(written.liveBytes),
      rowsLeft: left.rows,
      bytesLeftPerPage: perPage(left.bytes - (before.get('job_checkpoints')?.bytes ?? 0)),
    },
    tables,
  };
  console.log(JSON.stringify(result, null, 2));
} finally {
  await quire.close();
}
