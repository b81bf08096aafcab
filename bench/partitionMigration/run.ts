import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { MIGRATIONS_DIR, migrate } from '../../db/migrate';
import { ADMIN_URL, arg, databaseUrl } from '../lib/benchDatabase';

/**
 * bench/partitionMigration (D11): what migrations 0100 to 0102 (the time partitions) cost an
 * installation with history, and whether readers stop meanwhile. A database at the schema
 * before them is filled with `--events N` events (1,000,000), a delivery with one attempt for
 * every fifth event, and N provider calls; then the migrations run while one client reads the
 * outbox the way a stream resumes (by position, every 5 ms). Prints the migrations' time and
 * the reader's latency percentiles as JSON, per run and the median over `--runs` (1).
 *
 *   npx tsx bench/partitionMigration/run.ts --events 1000000 --runs 3
 */
const EVENTS = arg('events', 1_000_000);
const RUNS = arg('runs', 1);

async function once(): Promise<Record<string, number>> {
  const name = `quire_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = databaseUrl(name);
  const before = await mkdtemp(join(tmpdir(), 'quire-d11-'));
  const c = new pg.Client({ connectionString: url });
  const r = new pg.Client({ connectionString: url });
  try {
    for (const f of await readdir(MIGRATIONS_DIR))
      if (f.endsWith('.sql') && f < '0100')
        await copyFile(join(MIGRATIONS_DIR, f), join(before, f));
    await migrate(url, before);
    await c.connect();
    await c.query(`INSERT INTO workspaces (name) VALUES ('w')`);
    await c.query(
      `INSERT INTO event_outbox (workspace_id, type, data, created_at)
       SELECT 1, 'dev.quire.test', jsonb_build_object('jobId', 'j' || n), now() - make_interval(secs => $1 - n)
         FROM generate_series(1, $1) n`,
      [EVENTS],
    );
    await c.query('SELECT quire_sequence_events($1)', [EVENTS]);
    await c.query(
      `INSERT INTO webhook_subscriptions (id, workspace_id, url, secret_ciphertext, after_event_id)
       VALUES ('s', 1, 'https://hooks.example.com/', '\\x00', 0)`,
    );
    await c.query(
      `INSERT INTO webhook_deliveries (subscription_id, workspace_id, event_id, status)
       SELECT 's', 1, id, 'succeeded' FROM event_outbox WHERE id % 5 = 0`,
    );
    await c.query(
      `INSERT INTO webhook_delivery_attempts (delivery_id, status_code, latency_ms)
       SELECT id, 200, 5 FROM webhook_deliveries`,
    );
    await c.query(
      `INSERT INTO provider_calls (workspace_id, provider, operation, unit, outcome, occurred_at)
       SELECT 1, 'p', 'read', 'call', 'ok', now() - make_interval(secs => n) FROM generate_series(1, $1) n`,
      [EVENTS],
    );
    await c.query('VACUUM ANALYZE');

    await r.connect();
    let stop = false;
    const latencies: number[] = [];
    const reading = (async () => {
      let cursor = 0;
      while (!stop) {
        const t = performance.now();
        const { rows } = await r.query(
          `SELECT id, position FROM event_outbox
            WHERE workspace_id = 1 AND position > $1 ORDER BY position LIMIT 100`,
          [cursor],
        );
        latencies.push(performance.now() - t);
        cursor = rows.length === 0 ? 0 : cursor + 1_000;
        await new Promise((s) => setTimeout(s, 5));
      }
    })();
    await new Promise((s) => setTimeout(s, 500));
    const started = performance.now();
    await migrate(url);
    const migrationMs = performance.now() - started;
    await new Promise((s) => setTimeout(s, 500));
    stop = true;
    await reading;
    latencies.sort((a, b) => a - b);
    const at = (p: number) => round(latencies[Math.floor(p * (latencies.length - 1))]!);
    const { rows } = await c.query('SELECT count(*)::int AS n FROM event_outbox');
    if (rows[0].n !== EVENTS) throw new Error(`events after the migration: ${rows[0].n}`);
    return {
      migrationMs: Math.round(migrationMs),
      readerQueries: latencies.length,
      readerP50Ms: at(0.5),
      readerP99Ms: at(0.99),
      readerMaxMs: at(1),
    };
  } finally {
    await r.end().catch(() => {});
    await c.end().catch(() => {});
    await rm(before, { recursive: true, force: true });
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

const round = (n: number) => Math.round(n * 10) / 10;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const runs: Array<Record<string, number>> = [];
for (let i = 0; i < RUNS; i++) runs.push(await once());
const keys = Object.keys(runs[0]!);
console.log(
  JSON.stringify(
    {
      bench: 'partitionMigration',
      events: EVENTS,
      deliveries: Math.floor(EVENTS / 5),
      runs,
      median: Object.fromEntries(keys.map((k) => [k, median(runs.map((r) => r[k]!))])),
    },
    null,
    2,
  ),
);
