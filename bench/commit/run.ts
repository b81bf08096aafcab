import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { appendEvent, readAllEventsAfter, sequenceEvents } from '../../db/events';
import { migrate } from '../../db/migrate';
import { createPool, type Pool, type PoolClient, withTransaction } from '../../db/pool';
import { ADMIN_URL, databaseUrl } from '../lib/benchDatabase';

/**
 * D10 commit benchmark: commits per second at several concurrencies against real PostgreSQL,
 * with the outbox ordered three ways in the same run, each measured the same way:
 *   - `postgres`: each client a trivial INSERT + COMMIT into a table of its own (PostgreSQL's
 *     own commit ceiling on this machine: WAL flushes, group commit);
 *   - `globalLock`: the previous outbox (before migration 0090): the commit's page write, then
 *     the installation-wide advisory lock, the event insert and the NOTIFY its trigger sent,
 *     all inside the commit; a reader follows `id > cursor`;
 *   - `positions`: the outbox now: the page write and `appendEvent` (no shared lock, readers
 *     woken after commit); a reader follows `position > cursor`, stamping as it reads.
 * Each commit writes its own page row (commits of different pages) and one event, the shape
 * of a job's commit on its outbox side. Medians of BENCH_RUNS runs. Prints one JSON object
 * and writes bench/commit/last-run.json. Env: QUIRE_BENCH_ADMIN_URL, BENCH_SECONDS,
 * BENCH_RUNS, BENCH_CONCURRENCY (comma-separated).
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '8,32,64').split(',').map(Number);
/** The lock the previous `appendEvent` took (db/events.ts before D10). */
const PREVIOUS_OUTBOX_LOCK = 7_401_119_002;

type Mode = 'postgres' | 'globalLock' | 'positions';
const MODES: Mode[] = ['postgres', 'globalLock', 'positions'];

const round = (n: number) => Math.round(n * 10) / 10;
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function writePage(client: PoolClient, page: number) {
  await client.query(
    'UPDATE bench_pages SET revision = revision + 1, body = $2, updated_at = now() WHERE id = $1',
    [page, `revision text of page ${page}`],
  );
}

/** One commit of `mode` on the page `page` of workspace `ws`. */
async function commitOnce(pool: Pool, mode: Mode, ws: number, page: number) {
  if (mode === 'postgres') {
    await withTransaction(pool, (client) =>
      client.query('INSERT INTO bench_trivial (client) VALUES ($1)', [page]),
    );
    return;
  }
  await withTransaction(pool, async (client) => {
    await writePage(client, page);
    const event = {
      workspaceId: ws,
      type: 'dev.quire.transcription.completed',
      subject: `transcription-jobs/bench-${page}`,
      data: { pageId: page },
    };
    if (mode === 'positions') {
      await appendEvent(client, event);
      return;
    }
    await client.query('SELECT pg_advisory_xact_lock($1)', [PREVIOUS_OUTBOX_LOCK]);
    const { rows } = await client.query<{ id: number }>(
      'INSERT INTO event_outbox (workspace_id, type, subject, data) VALUES ($1, $2, $3, $4) RETURNING id',
      [event.workspaceId, event.type, event.subject, JSON.stringify(event.data)],
    );
    await client.query(`SELECT pg_notify('quire_events', $1)`, [String(rows[0]!.id)]);
  });
}

/** The outbox follower of each mode, woken by `quire_events` and polling every 50 ms. */
function startReader(url: string, pool: Pool, mode: Mode) {
  let stopped = false;
  let read = 0;
  let wake: () => void = () => {};
  const listener = new pg.Client({ connectionString: url });
  const done = (async () => {
    if (mode === 'postgres') return;
    await listener.connect();
    listener.on('notification', () => wake());
    await listener.query('LISTEN quire_events');
    let cursor = 0;
    if (mode === 'globalLock') {
      const { rows } = await pool.query<{ max: number | null }>(
        'SELECT max(id) AS max FROM event_outbox',
      );
      cursor = rows[0]?.max ?? 0;
    } else {
      await sequenceEvents(pool);
      const { rows } = await pool.query<{ max: number | null }>(
        'SELECT max(position) AS max FROM event_outbox',
      );
      cursor = rows[0]?.max ?? 0;
    }
    while (!stopped) {
      if (mode === 'globalLock') {
        const { rows } = await pool.query<{ id: number }>(
          'SELECT id FROM event_outbox WHERE id > $1 ORDER BY id LIMIT 500',
          [cursor],
        );
        read += rows.length;
        if (rows.length > 0) cursor = rows.at(-1)!.id;
        if (rows.length === 500) continue;
      } else {
        const events = await readAllEventsAfter(pool, cursor, 500);
        read += events.length;
        if (events.length > 0) cursor = events.at(-1)!.position;
        if (events.length === 500) continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake();
      await done;
      await listener.end().catch(() => {});
      return read;
    },
  };
}

interface Sample {
  commitsPerSecond: number;
  p50Ms: number;
  p95Ms: number;
  commits: number;
  read: number;
}

async function measure(
  url: string,
  pool: Pool,
  mode: Mode,
  clients: number,
  ws: number,
): Promise<Sample> {
  const reader = startReader(url, pool, mode);
  let commits = 0;
  const latencies: number[] = [];
  const started = performance.now();
  const until = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      const page = i + 1;
      while (performance.now() < until) {
        const t = performance.now();
        await commitOnce(pool, mode, ws, page);
        latencies.push(performance.now() - t);
        commits++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const read = await reader.stop();
  latencies.sort((a, b) => a - b);
  return {
    commitsPerSecond: commits / elapsed,
    p50Ms: latencies[Math.floor(latencies.length / 2)] ?? 0,
    p95Ms: latencies[Math.floor(latencies.length * 0.95)] ?? 0,
    commits,
    read,
  };
}

async function main() {
  const name = `quire_bench_commit_${process.pid}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = databaseUrl(name);
  await migrate(url);
  const maxClients = Math.max(...CONCURRENCY);
  const pool = createPool(url, maxClients + 4);
  try {
    const { rows } = await pool.query<{ id: number }>(
      `INSERT INTO workspaces (name) VALUES ('bench') RETURNING id`,
    );
    const ws = rows[0]!.id;
    await pool.query(`CREATE TABLE bench_pages (
      id bigint PRIMARY KEY, revision bigint NOT NULL DEFAULT 0, body text NOT NULL DEFAULT '',
      updated_at timestamptz NOT NULL DEFAULT now())`);
    await pool.query('INSERT INTO bench_pages (id) SELECT generate_series(1, $1)', [maxClients]);
    await pool.query(`CREATE TABLE bench_trivial (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, client int NOT NULL)`);
    // Warm the pool's connections and the caches.
    await Promise.all(
      Array.from({ length: maxClients }, (_, i) => commitOnce(pool, 'positions', ws, i + 1)),
    );
    const samples: Record<string, Sample[]> = {};
    for (let run = 0; run < RUNS; run++) {
      for (const clients of CONCURRENCY) {
        for (const mode of MODES) {
          const result = await measure(url, pool, mode, clients, ws);
          // The previous mode leaves its events unstamped: stamped here, outside the timing.
          await sequenceEvents(pool);
          const key = `${mode}@${clients}`;
          samples[key] = [...(samples[key] ?? []), result];
          process.stderr.write(
            `run ${run + 1} c=${clients} ${mode}: ${round(result.commitsPerSecond)} commits/s\n`,
          );
        }
      }
    }
    const byConcurrency = Object.fromEntries(
      CONCURRENCY.map((clients) => {
        const of = (mode: Mode) => {
          const runs = samples[`${mode}@${clients}`]!;
          return {
            commitsPerSecond: round(median(runs.map((r) => r.commitsPerSecond))),
            p50Ms: round(median(runs.map((r) => r.p50Ms))),
            p95Ms: round(median(runs.map((r) => r.p95Ms))),
            runs: runs.map((r) => round(r.commitsPerSecond)),
          };
        };
        const postgres = of('postgres');
        const globalLock = of('globalLock');
        const positions = of('positions');
        return [
          String(clients),
          {
            postgres,
            globalLock,
            positions,
            speedup: ratio(positions.commitsPerSecond, globalLock.commitsPerSecond),
            ofPostgresLimit: ratio(positions.commitsPerSecond, postgres.commitsPerSecond),
          },
        ];
      }),
    );
    const { rows: settings } = await pool.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings
        WHERE name IN ('synchronous_commit', 'fsync', 'commit_delay', 'max_connections')`,
    );
    const report = {
      bench: 'commit (D10)',
      at: new Date().toISOString(),
      secondsPerSample: SECONDS,
      runs: RUNS,
      postgres: {
        version: (await pool.query<{ v: string }>('SHOW server_version')).rows[0]!.v,
        ...Object.fromEntries(settings.map((s) => [s.name, s.setting])),
      },
      note: 'one process, direct pool clients; each commit writes its own page row and one outbox event; a follower reads the outbox throughout (postgres: trivial INSERT+COMMIT, no event)',
      concurrency: byConcurrency,
    };
    const json = JSON.stringify(report, null, 2);
    console.log(json);
    writeFileSync(new URL('./last-run.json', import.meta.url), `${json}\n`);
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
