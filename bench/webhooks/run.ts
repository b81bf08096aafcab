import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { appendEvent } from '../../db/events';
import { migrate } from '../../db/migrate';
import { createPool, withTransaction } from '../../db/pool';
import { createSubscription } from '../../db/webhooks';
import { startHttpsReceiver } from '../../test/support/httpsReceiver';
import { createWebhookRelay } from '../../worker/webhookRelay';
import { ADMIN_URL, databaseUrl } from '../lib/benchDatabase';

/**
 * Webhook benchmark (issue 4): commit-to-first-POST latency (p50/p95, target p95 < 1 s) with
 * events committed one at a time while the relay runs, and deliveries per second to a local
 * HTTPS receiver when a backlog is drained. Real Postgres, real TLS, the relay in-process
 * (woken by LISTEN/NOTIFY, polling as a fallback). Prints one JSON object and writes it to
 * bench/webhooks/last-run.json. Env: QUIRE_BENCH_ADMIN_URL, BENCH_LATENCY_EVENTS,
 * BENCH_THROUGHPUT_EVENTS, BENCH_CONCURRENCY.
 */
const LATENCY_EVENTS = Number(process.env.BENCH_LATENCY_EVENTS ?? 300);
const THROUGHPUT_EVENTS = Number(process.env.BENCH_THROUGHPUT_EVENTS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const SECRET_KEY = 'quire-bench-secret-key-0123456789-abcdefghijkl';
const silent = { debug() {}, info() {}, warn() {}, error() {} };

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)]!;
}

const round = (n: number) => Math.round(n * 100) / 100;

async function main() {
  const name = `quire_bench_webhooks_${process.pid}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = databaseUrl(name);
  await migrate(url);
  const pool = createPool(url, CONCURRENCY + 6);
  const receiver = await startHttpsReceiver();
  try {
    const { rows } = await pool.query<{ id: number }>(
      `INSERT INTO workspaces (name) VALUES ('bench') RETURNING id`,
    );
    const ws = rows[0]!.id;
    await createSubscription(pool, SECRET_KEY, {
      workspaceId: ws,
      url: `${receiver.origin}/bench`,
      secret: 'bench-webhook-secret-0123456789-abcdefghijklmnop',
    });
    const firstArrival = new Map<string, number>();
    receiver.setHandler((request) => {
      const id = String(request.headers['webhook-id']);
      if (!firstArrival.has(id)) firstArrival.set(id, request.receivedAtPrecise);
      return { status: 204 };
    });
    const commit = (i: number) =>
      withTransaction(pool, (client) =>
        appendEvent(client, {
          workspaceId: ws,
          type: 'dev.quire.transcription.completed',
          subject: `transcription-jobs/bench-${i}`,
          data: {
            pageId: i,
            revision: 1,
            completedSegments: 10,
            failedSegments: 0,
            totalSegments: 10,
          },
        }),
      );
    const relayOptions = {
      pool,
      secretKey: SECRET_KEY,
      logger: silent,
      allowHosts: receiver.allowHost,
      ca: receiver.ca,
      concurrency: CONCURRENCY,
      pollIntervalMs: 1000,
    };

    // 1. Latency: one event at a time, the relay idle and listening.
    let relay = createWebhookRelay(relayOptions);
    await relay.start();
    await new Promise((r) => setTimeout(r, 300));
    const committedAt = new Map<string, number>();
    for (let i = 0; i < LATENCY_EVENTS; i++) {
      const id = await commit(i);
      committedAt.set(String(id), performance.timeOrigin + performance.now());
      await new Promise((r) => setTimeout(r, 10));
    }
    await receiver.waitFor(
      () => [...committedAt.keys()].every((id) => firstArrival.has(id)),
      60_000,
    );
    const latencies = [...committedAt.entries()]
      .map(([id, at]) => firstArrival.get(id)! - at)
      .sort((a, b) => a - b);
    await relay.stop();

    // 2. Throughput: a backlog committed while no relay runs, then drained.
    const backlog: string[] = [];
    for (let i = 0; i < THROUGHPUT_EVENTS; i += 100) {
      const ids = await withTransaction(pool, async (client) => {
        const out: number[] = [];
        for (let j = i; j < Math.min(i + 100, THROUGHPUT_EVENTS); j++) {
          out.push(
            await appendEvent(client, {
              workspaceId: ws,
              type: 'dev.quire.transcription.completed',
              subject: `transcription-jobs/bulk-${j}`,
              data: { pageId: j },
            }),
          );
        }
        return out;
      });
      backlog.push(...ids.map(String));
    }
    relay = createWebhookRelay(relayOptions);
    const started = performance.now();
    await relay.start();
    await receiver.waitFor(() => backlog.every((id) => firstArrival.has(id)), 300_000);
    const seconds = (performance.now() - started) / 1000;
    await relay.stop();
    const { rows: statusRows } = await pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status',
    );

    const result = {
      benchmark: 'webhooks',
      commitToFirstPostMs: {
        events: latencies.length,
        p50: round(percentile(latencies, 50)),
        p95: round(percentile(latencies, 95)),
        p99: round(percentile(latencies, 99)),
        max: round(latencies.at(-1)!),
        targetP95: 1000,
      },
      throughput: {
        deliveries: backlog.length,
        seconds: round(seconds),
        deliveriesPerSecond: round(backlog.length / seconds),
        concurrency: CONCURRENCY,
      },
      receiverRequests: receiver.requests.length,
      deliveryStatus: Object.fromEntries(statusRows.map((r) => [r.status, r.n])),
    };
    const report = {
      command: 'npx tsx bench/webhooks/run.ts',
      machine:
        'Debian, Node 20, 2 cores, local PostgreSQL, receiver and relay on the same machine over TLS',
      at: new Date().toISOString(),
      result,
    };
    writeFileSync(
      new URL('./last-run.json', import.meta.url),
      `${JSON.stringify(report, null, 2)}\n`,
    );
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await receiver.close();
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
