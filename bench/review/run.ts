import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { migrate } from '../../db/migrate';

/**
 * V2 V4 review benchmarks (JSON on stdout), each over HTTP on loopback (the route handlers
 * behind node:http, fetched by the same process):
 *  1. the review queue's first page and its last page (a keyset token pointing at the end) with
 *     BENCH_LINES lines (default 1,000,000) in one workspace. Target: p95 under 20 ms.
 *  2. a line save's round trip: `POST …/pages/{id}/verify` of one line with If-Match, each on a
 *     page of its own. Target: p95 under 50 ms.
 * Each is run BENCH_RUNS times (default 3); the figure is the median of the runs' p95.
 *
 *   npx tsx bench/review/run.ts        (BENCH_LINES=1000000 BENCH_LINES_PER_PAGE=50 BENCH_SAMPLES=200)
 *
 * The lines are seeded with SQL (generate_series), the same rows commitRevision writes: the
 * AnnotationPage of revision 0 and its `page_lines`.
 */
if (!process.execArgv.some((a) => a.includes('react-server'))) {
  const self = fileURLToPath(import.meta.url);
  const run = spawnSync(process.execPath, ['--conditions=react-server', '--import', 'tsx', self], {
    stdio: 'inherit',
    env: process.env,
  });
  process.exit(run.status ?? 1);
}

const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
const PER_PAGE = Number(process.env.BENCH_LINES_PER_PAGE ?? 50);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const ADMIN = process.env.QUIRE_BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round((sorted[index] ?? 0) * 100) / 100;
}
const median = (values: number[]) => percentile(values, 50);

async function main() {
  const name = `quire_bench_review_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  await migrate(databaseUrl);

  const { createWorkspace } = await import('../../db/workspaces');
  const { encodePageToken } = await import('../../core/pageToken');
  const { parseConfig } = await import('../../core/config');
  const server = await import('../../web/lib/server');
  const secret = randomBytes(32).toString('hex');
  server.configureWeb(parseConfig({ DATABASE_URL: databaseUrl, QUIRE_SECRET_KEY: secret }));
  const reviewRoute = await import('../../web/app/api/v1/workspaces/[ws]/review/route');
  const verifyRoute = await import(
    '../../web/app/api/v1/workspaces/[ws]/pages/[pageId]/verify/route'
  );
  const pool = server.pool();
  const { workspace, apiKey } = await createWorkspace(pool, 'Bench review');
  const ws = workspace.id;
  const pages = Math.ceil(LINES / PER_PAGE);

  const seedStarted = performance.now();
  await pool.query(`INSERT INTO items (workspace_id, id) VALUES ($1, 'bench')`, [ws]);
  // Pages at revision 0 holding their lines, with machine confidences spread over [0, 1).
  await pool.query(
    `INSERT INTO pages (workspace_id, item_id, position, kind, canvas_uri, width, height, revision, annotation_page)
     SELECT $1, 'bench', g, 'image', 'http://bench.test/c/' || g, 1800, 100 + $3 * 40, 0,
            jsonb_build_object('@context', 'http://iiif.io/api/presentation/3/context.json',
              'id', 'http://bench.test/c/' || g || '/annotations/r0', 'type', 'AnnotationPage',
              'items', (SELECT jsonb_agg(jsonb_build_object(
                  'id', 'http://bench.test/c/' || g || '/annotations/r0/s' || l, 'type', 'Annotation',
                  'motivation', 'supplementing',
                  'body', jsonb_build_object('type', 'TextualBody', 'value', 'line ' || l || ' of page ' || g,
                                             'format', 'text/plain', 'purpose', 'transcribing'),
                  'target', 'http://bench.test/c/' || g || '#xywh=100,' || (100 + l * 40) || ',1600,36',
                  'quire:index', l,
                  'quire:confidence', ((g * 7919 + l * 104729) % 10000) / 10000.0) ORDER BY l)
                FROM generate_series(0, $3 - 1) l))
       FROM generate_series(1, $2) g`,
    [ws, pages, PER_PAGE],
  );
  await pool.query(
    `INSERT INTO page_revisions (page_id, revision, annotation_page, source)
     SELECT id, 0, annotation_page, 'initial' FROM pages WHERE workspace_id = $1`,
    [ws],
  );
  await pool.query(
    `INSERT INTO page_lines (page_id, line_index, workspace_id, item_id, revision, state, confidence,
                             text, target)
     SELECT p.id, (a->>'quire:index')::int, p.workspace_id, p.item_id, 0, 'machine',
            (a->>'quire:confidence')::real, a->'body'->>'value', a->>'target'
       FROM pages p, jsonb_array_elements(p.annotation_page->'items') a WHERE p.workspace_id = $1`,
    [ws],
  );
  await pool.query('ANALYZE page_lines');
  await pool.query('ANALYZE pages');
  const seedSeconds = Math.round((performance.now() - seedStarted) / 100) / 10;

  // The route handlers behind node:http: each request a real HTTP round trip on loopback.
  const routes = {
    review: (req: Request) => reviewRoute.GET(req, { params: Promise.resolve({ ws: String(ws) }) }),
    verify: (req: Request, pageId: string) =>
      verifyRoute.POST(req, { params: Promise.resolve({ ws: String(ws), pageId }) }),
  };
  const http = createServer(async (incoming, outgoing) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const target = new URL(incoming.url ?? '/', 'http://bench.test');
    const headers = new Headers();
    for (const [k, v] of Object.entries(incoming.headers))
      if (typeof v === 'string') headers.set(k, v);
    const request = new Request(target, {
      method: incoming.method,
      headers,
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
    });
    const verify = /\/pages\/(\d+)\/verify$/.exec(target.pathname);
    const response = verify
      ? await routes.verify(request, verify[1]!)
      : await routes.review(request);
    outgoing.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    outgoing.end(Buffer.from(await response.arrayBuffer()));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}/api/v1/workspaces/${ws}`;
  const auth = { authorization: `Bearer ${apiKey}` };

  // The last page: a token just before the queue's last 50 lines.
  const tail = await pool.query(
    `SELECT confidence, page_id, line_index FROM page_lines
      WHERE workspace_id = $1 AND state <> 'verified'
      ORDER BY confidence DESC, page_id DESC, line_index DESC OFFSET 50 LIMIT 1`,
    [ws],
  );
  const lastToken = encodePageToken(
    secret,
    { workspaceId: ws, scope: 'review-queue', filter: { itemId: null } },
    [tail.rows[0].confidence, Number(tail.rows[0].page_id), tail.rows[0].line_index],
  );

  async function timed(url: string, init?: RequestInit): Promise<number> {
    const started = performance.now();
    const response = await fetch(url, init);
    const body = await response.text();
    if (response.status !== 200)
      throw new Error(`${url}: ${response.status} ${body.slice(0, 200)}`);
    return performance.now() - started;
  }

  const pageIds = (
    await pool.query<{ id: string }>(
      'SELECT id FROM pages WHERE workspace_id = $1 ORDER BY random()',
      [ws],
    )
  ).rows.map((r) => Number(r.id));
  let nextPage = 0;
  const runs: Array<{ firstP95Ms: number; lastP95Ms: number; saveP95Ms: number }> = [];
  for (let run = 0; run < RUNS; run++) {
    const first: number[] = [];
    const last: number[] = [];
    const save: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      first.push(await timed(`${base}/review?pageSize=50`, { headers: auth }));
      last.push(
        await timed(`${base}/review?pageSize=50&pageToken=${lastToken}`, { headers: auth }),
      );
    }
    for (let i = 0; i < Math.min(SAMPLES, 100); i++) {
      // Each save on a page of its own, from the revision read (0), of one line.
      const pageId = pageIds[nextPage++ % pageIds.length]!;
      save.push(
        await timed(`${base}/pages/${pageId}/verify`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json', 'if-match': '"0"' },
          body: JSON.stringify({ lines: [i % PER_PAGE] }),
        }),
      );
    }
    runs.push({
      firstP95Ms: percentile(first, 95),
      lastP95Ms: percentile(last, 95),
      saveP95Ms: percentile(save, 95),
    });
  }
  http.close();
  await pool.end();
  await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
  await admin.end();

  console.log(
    JSON.stringify(
      {
        bench: 'review',
        machine: 'shared (other work running on the same cores); figures are noisy',
        lines: LINES,
        linesPerPage: PER_PAGE,
        pages,
        seedSeconds,
        samplesPerRun: SAMPLES,
        runs,
        median: {
          queueFirstPageP95Ms: median(runs.map((r) => r.firstP95Ms)),
          queueLastPageP95Ms: median(runs.map((r) => r.lastP95Ms)),
          lineSaveP95Ms: median(runs.map((r) => r.saveP95Ms)),
        },
        targets: { queueP95Ms: 20, lineSaveP95Ms: 50 },
      },
      null,
      2,
    ),
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
