import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { migrate } from '../../db/migrate';

/**
 * API benchmarks (JSON on stdout):
 *  1. L1 list-jobs server time with 1,000,000 jobs seeded by generate_series: the route handler
 *     called in-process (auth, token check, keyset query, JSON), first page vs a deep page, with
 *     and without a status filter. Target: p95 under 20 ms, flat from first page to deep.
 *  2. S1 commit to SSE receipt with N open streams (default 200) on one web process: the
 *     events route handler in-process, each stream read as its own ReadableStream.
 *
 *   npx tsx bench/api/run.ts            (BENCH_JOBS=1000000 BENCH_STREAMS=200 BENCH_EVENTS=50)
 *
 * Route modules import `server-only`, which resolves outside Next only under the
 * `react-server` condition, so the script re-runs itself with it.
 */
if (!process.execArgv.some((a) => a.includes('react-server'))) {
  const self = fileURLToPath(import.meta.url);
  const run = spawnSync(process.execPath, ['--conditions=react-server', '--import', 'tsx', self], {
    stdio: 'inherit',
    env: process.env,
  });
  process.exit(run.status ?? 1);
}

const JOBS = Number(process.env.BENCH_JOBS ?? 1_000_000);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 200);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const ADMIN = process.env.QUIRE_BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round((sorted[index] ?? 0) * 100) / 100;
}

const stats = (values: number[]) => ({
  samples: values.length,
  p50Ms: percentile(values, 50),
  p95Ms: percentile(values, 95),
  maxMs: percentile(values, 100),
});

async function main() {
  const name = `quire_bench_api_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  await migrate(databaseUrl);

  const { createWorkspace } = await import('../../db/workspaces');
  const { createPage, prepareItem } = await import('../../db/ingest');
  const { withTransaction } = await import('../../db/pool');
  const { encodePageToken } = await import('../../core/pageToken');
  const { parseConfig } = await import('../../core/config');
  const server = await import('../../web/lib/server');
  server.configureWeb(
    parseConfig({
      DATABASE_URL: databaseUrl,
      QUIRE_SECRET_KEY: randomBytes(32).toString('hex'),
      QUIRE_ENABLE_SIMULATED: '1',
      QUIRE_SSE_MAX_STREAMS_PER_KEY: String(STREAMS + 10),
      QUIRE_SSE_CHECKPOINT_MS: '1000',
      QUIRE_SSE_HEARTBEAT_MS: '15000',
    }),
  );
  const jobsRoute = await import('../../web/app/api/v1/workspaces/[ws]/transcription-jobs/route');
  const eventsRoute = await import('../../web/app/api/v1/workspaces/[ws]/events/route');
  const { closeEventHub } = await import('../../web/lib/eventStream');
  const pool = server.pool();

  try {
    const { workspace, apiKey } = await createWorkspace(pool, 'bench');
    const ws = workspace.id;
    const seedStarted = performance.now();
    // Pages as an ingest writes them, one after the other: their ids are consecutive.
    await withTransaction(pool, async (tx) => {
      let position = await prepareItem(tx, ws, 'item-1');
      for (let g = 0; g < 1000; g++) {
        await createPage(
          tx,
          { workspaceId: ws, itemId: 'item-1', position: position++, kind: 'image' },
          'http://bench',
        );
      }
    });
    const { rows: pageRows } = await pool.query('SELECT min(id) AS lo FROM pages');
    const firstPage = Number(pageRows[0].lo);
    // Ids sort like UUIDv7 text (time-ordered); statuses are terminal so no workflow is implied.
    await pool.query(
      `INSERT INTO transcription_jobs (id, workspace_id, page_id, workflow_id, status, provider, snapshot, input_revision,
         completed_segments, failed_segments, total_segments, result_revision, ended_at, superseded_by)
       SELECT id, $1, $2 + (g % 1000), 'transcription-job-' || id,
              CASE WHEN g % 10 < 7 THEN 'completed' WHEN g % 10 = 7 THEN 'failed' WHEN g % 10 = 8 THEN 'canceled' ELSE 'superseded' END,
              'simulated', '{}'::jsonb, 0,
              CASE WHEN g % 10 < 7 THEN 8 ELSE 0 END, 0, CASE WHEN g % 10 < 7 THEN 8 ELSE NULL END,
              CASE WHEN g % 10 < 7 THEN 1 ELSE NULL END, now(),
              CASE WHEN g % 10 = 9 THEN id ELSE NULL END
         FROM (SELECT g, '0190' || lpad(to_hex(g), 8, '0') || '-7000-8000-' || lpad(to_hex(g), 12, '0') AS id
                 FROM generate_series(1, $3::int) g) s`,
      [ws, firstPage, JOBS],
    );
    await pool.query('ANALYZE transcription_jobs');
    const seedSeconds = Math.round((performance.now() - seedStarted) / 100) / 10;

    const secret = server.config().QUIRE_SECRET_KEY;
    const list = async (query: string) => {
      const request = new Request(
        `http://bench/api/v1/workspaces/${ws}/transcription-jobs?${query}`,
        {
          headers: { authorization: `Bearer ${apiKey}` },
        },
      );
      const started = performance.now();
      const response = await jobsRoute.GET(request, {
        params: Promise.resolve({ ws: String(ws) }),
      });
      const body = await response.text();
      const elapsed = performance.now() - started;
      if (response.status !== 200) throw new Error(`list answered ${response.status}: ${body}`);
      return {
        elapsed,
        body: JSON.parse(body) as { jobs: unknown[]; nextPageToken: string | null },
      };
    };
    const idAt = async (offset: number, status?: string) => {
      const { rows } = await pool.query(
        `SELECT id FROM transcription_jobs WHERE workspace_id = $1 AND ($2::text IS NULL OR status = $2)
          ORDER BY id DESC OFFSET $3 LIMIT 1`,
        [ws, status ?? null, offset],
      );
      return rows[0].id as string;
    };
    const measure = async (query: string) => {
      const times: number[] = [];
      for (let i = 0; i < 20; i++) await list(query); // warm-up
      for (let i = 0; i < SAMPLES; i++) times.push((await list(query)).elapsed);
      return stats(times);
    };
    const deep = Math.floor(JOBS * 0.9);
    const deepToken = encodePageToken(
      secret,
      { workspaceId: ws, scope: 'transcription-jobs', filter: {} },
      await idAt(deep),
    );
    const deepFailedToken = encodePageToken(
      secret,
      { workspaceId: ws, scope: 'transcription-jobs', filter: { status: 'failed' } },
      await idAt(Math.floor(deep / 10), 'failed'),
    );
    const lastToken = encodePageToken(
      secret,
      { workspaceId: ws, scope: 'transcription-jobs', filter: {} },
      await idAt(JOBS - 51),
    );
    const listJobs = {
      jobs: JOBS,
      seedSeconds,
      pageSize: 50,
      firstPage: await measure('pageSize=50'),
      deepPage: {
        offset: deep,
        ...(await measure(`pageSize=50&pageToken=${encodeURIComponent(deepToken)}`)),
      },
      lastPage: await measure(`pageSize=50&pageToken=${encodeURIComponent(lastToken)}`),
      firstPageStatusFailed: await measure('pageSize=50&status=failed'),
      deepPageStatusFailed: await measure(
        `pageSize=50&status=failed&pageToken=${encodeURIComponent(deepFailedToken)}`,
      ),
      firstPage100: await measure('pageSize=100'),
      targetP95Ms: 20,
    };

    // S1: N streams on one process; each event's commit-to-receipt time in every stream.
    const decoder = new TextDecoder();
    const receipts = new Map<number, number[]>();
    const readers: Array<ReadableStreamDefaultReader<Uint8Array>> = [];
    const aborts: AbortController[] = [];
    const connectStarted = performance.now();
    for (let i = 0; i < STREAMS; i++) {
      const abort = new AbortController();
      aborts.push(abort);
      const response = await eventsRoute.GET(
        new Request(`http://bench/api/v1/workspaces/${ws}/events`, {
          headers: { authorization: `Bearer ${apiKey}` },
          signal: abort.signal,
        }),
        { params: Promise.resolve({ ws: String(ws) }) },
      );
      if (response.status !== 200 || !response.body)
        throw new Error(`stream answered ${response.status}`);
      const reader = response.body.getReader();
      readers.push(reader);
      void (async () => {
        let buffer = '';
        for (;;) {
          const { done, value } = await reader
            .read()
            .catch(() => ({ done: true, value: undefined }));
          if (done || !value) return;
          const now = performance.now();
          buffer += decoder.decode(value, { stream: true });
          let end = buffer.indexOf('\n\n');
          while (end >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const id = /^id: (\d+)$/m.exec(frame)?.[1];
            if (id && frame.includes('event: dev.quire.transcription')) {
              const list = receipts.get(Number(id)) ?? [];
              list.push(now);
              receipts.set(Number(id), list);
            }
            end = buffer.indexOf('\n\n');
          }
        }
      })();
    }
    const connectMs = Math.round(performance.now() - connectStarted);
    const { appendEvent } = await import('../../db/events');
    const committedAt = new Map<number, number>();
    for (let i = 0; i < EVENTS; i++) {
      const id = await withTransaction(pool, (client) =>
        appendEvent(client, {
          workspaceId: ws,
          type: 'dev.quire.transcription.task.started',
          data: { i },
        }),
      );
      committedAt.set(id, performance.now());
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const deadline = Date.now() + 30_000;
    while (
      Date.now() < deadline &&
      [...committedAt.keys()].some((id) => (receipts.get(id)?.length ?? 0) < STREAMS)
    ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const latencies: number[] = [];
    let missing = 0;
    for (const [id, at] of committedAt) {
      const got = receipts.get(id) ?? [];
      missing += STREAMS - got.length;
      for (const t of got) latencies.push(Math.max(0, t - at));
    }
    for (const abort of aborts) abort.abort();
    for (const reader of readers) await reader.cancel().catch(() => {});
    const sse = {
      streams: STREAMS,
      events: EVENTS,
      connectAllMs: connectMs,
      commitToReceipt: stats(latencies),
      missingReceipts: missing,
      note: 'in-process: route handler streams read directly (no HTTP socket); one web process, one LISTEN connection',
    };

    const result = { benchmark: 'api', at: new Date().toISOString(), listJobs, sse };
    const json = JSON.stringify(result, null, 2);
    writeFileSync(new URL('./last-run.json', import.meta.url), `${json}\n`);
    console.log(json);
  } finally {
    await closeEventHub();
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
