/**
 * bench/pgsocket (P6): what one statement costs over loopback TCP and over the Unix socket of
 * the same PostgreSQL, in CPU microseconds of the client (this process) and of its backend.
 * Each connection runs the same mix the hot path runs: short parameterised reads and small
 * transactions (BEGIN, an UPDATE of one row, COMMIT), interleaved, several rounds, medians.
 * Env: BENCH_STATEMENTS (6000 per round), BENCH_RUNS (3), QUIRE_BENCH_ADMIN_URL (TCP),
 * BENCH_SOCKET_DIR (/var/run/postgresql).
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { REPO_ROOT } from '../../test/support/fixtures';
import { cpuOf } from '../lib/cpu';
import { median, round } from '../lib/stack';

const STATEMENTS = Math.max(100, Number(process.env.BENCH_STATEMENTS ?? 6000));
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const ADMIN = process.env.QUIRE_BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SOCKET_DIR = process.env.BENCH_SOCKET_DIR ?? '/var/run/postgresql';

const name = `quire_bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: ADMIN });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const tcpUrl = new URL(ADMIN);
tcpUrl.pathname = `/${name}`;
const port = Number(tcpUrl.port || 5432);
const transports = {
  tcp: { connectionString: tcpUrl.toString() },
  socket: { host: SOCKET_DIR, port, user: decodeURIComponent(tcpUrl.username), database: name },
} satisfies Record<string, pg.ClientConfig>;

async function measure(config: pg.ClientConfig) {
  const client = new pg.Client(config);
  await client.connect();
  await client.query('CREATE TABLE IF NOT EXISTS t (id int PRIMARY KEY, n int NOT NULL)');
  await client.query('INSERT INTO t VALUES (1, 0) ON CONFLICT DO NOTHING');
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const backend = rows[0]!.pid;
  const clientBefore = process.cpuUsage();
  const serverBefore = cpuOf(backend).self;
  let statements = 0;
  while (statements < STATEMENTS) {
    await client.query('SELECT n FROM t WHERE id = $1', [1]);
    await client.query('BEGIN');
    await client.query('UPDATE t SET n = n + 1 WHERE id = $1', [1]);
    await client.query('COMMIT');
    statements += 4;
  }
  const used = process.cpuUsage(clientBefore);
  const server = cpuOf(backend).self - serverBefore;
  await client.end();
  return {
    clientMicroseconds: (used.user + used.system) / statements,
    serverMicroseconds: (server * 1e6) / statements,
  };
}

const results: Record<string, Array<{ clientMicroseconds: number; serverMicroseconds: number }>> = {
  tcp: [],
  socket: [],
};
for (let run = 0; run < RUNS; run++) {
  // Alternated, so load that comes and goes on a shared machine falls on both.
  for (const [transport, config] of Object.entries(transports)) {
    results[transport]!.push(await measure(config));
  }
}
await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
await admin.end();

const summary = Object.fromEntries(
  Object.entries(results).map(([transport, runs]) => [
    transport,
    {
      clientMicrosecondsPerStatementMedian: round(median(runs.map((r) => r.clientMicroseconds)), 1),
      serverMicrosecondsPerStatementMedian: round(median(runs.map((r) => r.serverMicroseconds)), 1),
    },
  ]),
);
const report = {
  bench: 'pgsocket',
  machine: { cores: os.availableParallelism(), loadAverage: os.loadavg() },
  statementsPerRun: STATEMENTS,
  runs: RUNS,
  mix: 'per 4 statements: one parameterised SELECT of a row, BEGIN, UPDATE of that row, COMMIT',
  ...summary,
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
await writeFile(
  path.join(REPO_ROOT, 'bench/pgsocket/last-run.json'),
  `${JSON.stringify(report, null, 2)}\n`,
);
