import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { migrate } from '../../db/migrate';

/**
 * F2/F3 benchmarks (JSON on stdout), on one workspace of BENCH_PAGES pages (default 1,000,000)
 * of real-looking text: the lines the real offline engine (tesseract) reads from the manifesto
 * scan, the ground-truth lines of the Kant page (PAGE XML) and of the Fraktur line images,
 * recombined in SQL, twelve lines to a page, plus a folio line per page; 100 pages to an item.
 *
 *  1. Search over HTTP with snippets (target p95 < 100 ms): the route handler behind a plain
 *     Node HTTP server, asked by fetch, for a rare query (one folio), a two-word query and a
 *     common word; and EXPLAIN of the statement the API runs: it must probe `pages_search_workspace`
 *     (the GIN index) and mark lines only for the returned hits.
 *  2. Items list first and last page over HTTP (target p95 < 20 ms).
 *  3. A page move's transaction: one page to another item of 100 pages and back.
 * Each figure is the median of BENCH_RUNS (default 3) runs of BENCH_SAMPLES samples each.
 *
 *   npx tsx bench/search/run.ts          (BENCH_PAGES=1000000 BENCH_RUNS=3 BENCH_SAMPLES=60)
 */
if (!process.execArgv.some((a) => a.includes('react-server'))) {
  const self = fileURLToPath(import.meta.url);
  const run = spawnSync(process.execPath, ['--conditions=react-server', '--import', 'tsx', self], {
    stdio: 'inherit',
    env: process.env,
  });
  process.exit(run.status ?? 1);
}

const PAGES = Number(process.env.BENCH_PAGES ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 60);
const PAGES_PER_ITEM = 100;
const LINES_PER_PAGE = 12;
const ADMIN = process.env.QUIRE_BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? 0;
}
const round = (n: number) => Math.round(n * 100) / 100;
const median = (values: number[]) => percentile(values, 50);

/** The line corpus: what the engine reads from the real scan, and real ground truth. */
async function corpus(): Promise<string[]> {
  const { TesseractProvider } = await import('../../providers/tesseract');
  const tesseract = new TesseractProvider();
  const scan = join(ROOT, 'test/fixtures/real/manifesto-page-0015.png');
  const reading = await tesseract.readPage(
    { path: scan, mediaType: 'image/png' },
    { signal: new AbortController().signal, language: 'en', options: {}, callKey: 'bench' },
  );
  await tesseract.close();
  const kant = readFileSync(
    join(ROOT, 'test/fixtures/interchange/kant_aufklaerung_1784_0017.page.xml'),
    'utf8',
  );
  const kantLines = [...kant.matchAll(/<TextLine[\s\S]*?<Unicode>([^<]+)<\/Unicode>/g)].map(
    (m) => m[1]!,
  );
  const frakturDir = join(ROOT, 'test/fixtures/real/fraktur-lines');
  const fraktur = readdirSync(frakturDir)
    .filter((f) => f.endsWith('.gt.txt'))
    .map((f) => readFileSync(join(frakturDir, f), 'utf8').trim());
  return [...reading.lines.map((l) => l.text), ...kantLines, ...fraktur].filter(
    (t) => t.length > 3,
  );
}

async function main() {
  const lines = await corpus();
  const name = `quire_bench_search_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  await migrate(databaseUrl);

  const { createWorkspace } = await import('../../db/workspaces');
  const { listItemPages } = await import('../../db/items');
  const { arrangeItemPages } = await import('../../db/itemPages');
  const { configsInUse, searchStatement } = await import('../../db/search');
  const { encodePageToken } = await import('../../core/pageToken');
  const { parseConfig } = await import('../../core/config');
  const server = await import('../../web/lib/server');
  server.configureWeb(
    parseConfig({ DATABASE_URL: databaseUrl, QUIRE_SECRET_KEY: randomBytes(32).toString('hex') }),
  );
  const searchRoute = await import('../../web/app/api/v1/workspaces/[ws]/search/route');
  const itemsRoute = await import('../../web/app/api/v1/workspaces/[ws]/items/route');
  const pool = server.pool();

  const http = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const match = /^\/api\/v1\/workspaces\/(\d+)\/(search|items)$/.exec(path);
      if (!match) {
        res.statusCode = 404;
        res.end();
        return;
      }
      const route = match[2] === 'search' ? searchRoute : itemsRoute;
      const response = await route.GET(
        new Request(`http://bench${req.url}`, {
          headers: { authorization: String(req.headers.authorization ?? '') },
        }),
        { params: Promise.resolve({ ws: match[1]! }) },
      );
      res.statusCode = response.status;
      res.setHeader('content-type', 'application/json');
      res.end(Buffer.from(await response.arrayBuffer()));
    })();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  try {
    const { workspace, apiKey } = await createWorkspace(pool, 'bench');
    const ws = workspace.id;
    const seedStarted = performance.now();
    await pool.query('CREATE TABLE bench_lines (n int PRIMARY KEY, text text NOT NULL)');
    await pool.query(
      'INSERT INTO bench_lines SELECT n - 1, t FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n)',
      [lines],
    );
    const items = Math.ceil(PAGES / PAGES_PER_ITEM);
    await pool.query(
      `INSERT INTO items (workspace_id, id, title)
       SELECT $1, 'item-' || lpad(i::text, 7, '0'), 'Volume ' || i FROM generate_series(0, $2::int - 1) i`,
      [ws, items],
    );
    // The index is built once after the load, as a restore would.
    await pool.query('DROP INDEX pages_search_workspace');
    const chunk = 100_000;
    for (let from = 0; from < PAGES; from += chunk) {
      await pool.query(
        `INSERT INTO pages (workspace_id, item_id, position, kind, canvas_uri, revision, annotation_page, search_text)
         SELECT $1::bigint, 'item-' || lpad((g / ${PAGES_PER_ITEM})::text, 7, '0'), g % ${PAGES_PER_ITEM}, 'image',
                'http://bench/iiif/' || $1::bigint || '/item/canvas/' || g, 1,
                jsonb_build_object('@context', 'http://iiif.io/api/presentation/3/context.json',
                  'id', 'http://bench/p/' || g || '/annotations/r1', 'type', 'AnnotationPage', 'items', l.items),
                l.text
           FROM generate_series($2::int, $3::int - 1) g
           CROSS JOIN LATERAL (
             SELECT jsonb_agg(jsonb_build_object('id', 'http://bench/p/' || g || '/s' || k, 'type', 'Annotation',
                      'motivation', 'supplementing',
                      'body', jsonb_build_object('type', 'TextualBody', 'value', t, 'format', 'text/plain'),
                      'target', 'http://bench/p/' || g || '#xywh=10,' || (k * 40) || ',900,36',
                      'quire:index', k) ORDER BY k) AS items,
                    string_agg(t, E'\\n' ORDER BY k) AS text
               FROM (SELECT k, CASE WHEN k = ${LINES_PER_PAGE} THEN 'Folio ' || g
                                    ELSE (SELECT text FROM bench_lines
                                           WHERE n = (g::bigint * 7919 + k * 104729 + (g / 97) * (k + 3)) % $4) END AS t
                       FROM generate_series(0, ${LINES_PER_PAGE}) k) lines_of_page) l`,
        [ws, from, Math.min(PAGES, from + chunk), lines.length],
      );
      process.stderr.write(`seeded ${Math.min(PAGES, from + chunk)} pages\n`);
    }
    await pool.query(
      `CREATE INDEX pages_search_workspace ON pages
         USING gin (quire_workspace_lexemes(workspace_id, search_tsv)) WHERE deleted_at IS NULL`,
    );
    // What autovacuum does after a load: statistics and the visibility map.
    await pool.query('VACUUM ANALYZE pages');
    await pool.query('VACUUM ANALYZE items');
    const seedSeconds = Math.round((performance.now() - seedStarted) / 100) / 10;

    const timed = async (path: string) => {
      const started = performance.now();
      const response = await fetch(`${base}${path}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      const body = await response.text();
      const elapsed = performance.now() - started;
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${body}`);
      return { elapsed, body: JSON.parse(body) };
    };
    const sample = async (path: string) => {
      for (let i = 0; i < 5; i++) await timed(path); // warm-up
      const times: number[] = [];
      for (let i = 0; i < SAMPLES; i++) times.push((await timed(path)).elapsed);
      return times;
    };

    // Queries of three selectivities, from the corpus itself.
    const words = [
      ...new Set(
        lines
          .join(' ')
          .toLowerCase()
          .match(/\p{L}{6,}/gu) ?? [],
      ),
    ];
    const counts = await pool.query<{ w: string; n: number }>(
      `SELECT w, (SELECT count(*) FROM pages WHERE workspace_id = $1 AND search_tsv @@ plainto_tsquery('simple', w))::int AS n
         FROM unnest($2::text[]) w`,
      [ws, words.slice(0, 40)],
    );
    const byCount = counts.rows.filter((r) => r.n > 0).sort((a, b) => a.n - b.n);
    const common = byCount[byCount.length - 1]!;
    const pair = `${byCount[0]!.w} ${byCount[1]!.w}`;
    const folio = `folio ${Math.floor(PAGES / 2) + 17}`;
    const queries = { rare: folio, twoWords: pair, common: common.w };
    const matches: Record<string, number> = {};
    for (const [kind, q] of Object.entries(queries)) {
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM pages WHERE workspace_id = $1 AND search_tsv @@ plainto_tsquery('simple', $2)`,
        [ws, q],
      );
      matches[kind] = rows[0].n;
    }

    // EXPLAIN the statement the API runs, for a selective and for the common query.
    const explainOf = async (q: string) => {
      const statement = searchStatement(ws, { q, limit: 20 }, await configsInUse(pool, ws));
      const explained = await pool.query({
        text: `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`,
        values: statement.values,
      });
      const root = explained.rows[0]['QUERY PLAN'][0];
      const nodes: Array<Record<string, unknown>> = [];
      const walk = (node: Record<string, unknown>) => {
        nodes.push(node);
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? [])
          walk(child);
      };
      walk(root.Plan);
      return {
        q,
        usesGinIndex: nodes.some((n) => n['Index Name'] === 'pages_search_workspace'),
        seqScanOnPages: nodes.some(
          (n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'pages',
        ),
        // Each loop of the line scan is one page whose lines were marked.
        pagesWhoseLinesWereMarked: nodes
          .filter(
            (n) =>
              n['Node Type'] === 'Function Scan' && n['Function Name'] === 'jsonb_array_elements',
          )
          .reduce((sum, n) => sum + Number(n['Actual Loops']), 0),
        hitsReturned: 20,
        executionMs: round(Number(root['Execution Time'])),
      };
    };
    const explain = {
      rare: await explainOf(queries.rare),
      twoWords: await explainOf(queries.twoWords),
      common: await explainOf(queries.common),
    };

    // The items lists: first page and last page of the workspace's 10,000 items.
    const secret = server.config().QUIRE_SECRET_KEY;
    const lastToken = encodePageToken(
      secret,
      { workspaceId: ws, scope: 'items', filter: { collection: null } },
      `item-${String(items - 51).padStart(7, '0')}`,
    );
    const runs: Array<Record<string, number>> = [];
    for (let run = 0; run < RUNS; run++) {
      const figures: Record<string, number> = {};
      for (const [kind, q] of Object.entries(queries)) {
        const times = await sample(
          `/api/v1/workspaces/${ws}/search?q=${encodeURIComponent(q)}&limit=20`,
        );
        figures[`search_${kind}_p50`] = percentile(times, 50);
        figures[`search_${kind}_p95`] = percentile(times, 95);
      }
      const first = await sample(`/api/v1/workspaces/${ws}/items?pageSize=50`);
      const last = await sample(
        `/api/v1/workspaces/${ws}/items?pageSize=50&pageToken=${encodeURIComponent(lastToken)}`,
      );
      figures.items_first_p95 = percentile(first, 95);
      figures.items_last_p95 = percentile(last, 95);
      // Page moves: a page of item A to the end of item B, and back, each one transaction.
      const a = `item-${String(run * 2 + 1).padStart(7, '0')}`;
      const b = `item-${String(run * 2 + 2).padStart(7, '0')}`;
      const actor = { kind: 'cli' } as const;
      const moves: number[] = [];
      for (let i = 0; i < Math.max(10, Math.floor(SAMPLES / 2)); i++) {
        const [from, to] = i % 2 === 0 ? [a, b] : [b, a];
        const source = await listItemPages(pool, ws, from);
        const target = await listItemPages(pool, ws, to);
        const moving = source[source.length - 1]!.pageId;
        const started = performance.now();
        await arrangeItemPages(pool, actor, ws, to, [...target.map((p) => p.pageId), moving]);
        moves.push(performance.now() - started);
      }
      figures.page_move_p50 = percentile(moves, 50);
      figures.page_move_p95 = percentile(moves, 95);
      runs.push(figures);
      process.stderr.write(`run ${run + 1}: ${JSON.stringify(figures)}\n`);
    }
    const med = (key: string) => round(median(runs.map((r) => r[key]!)));
    process.stdout.write(
      `${JSON.stringify(
        {
          bench: 'search',
          machine: 'shared (other work ran on the same 2 cores)',
          pages: PAGES,
          items,
          linesPerPage: LINES_PER_PAGE + 1,
          corpusLines: lines.length,
          seedSeconds,
          runs: RUNS,
          samplesPerRun: SAMPLES,
          search: {
            overHttp: true,
            limit: 20,
            queries,
            matchingPages: matches,
            rare: { p50Ms: med('search_rare_p50'), p95Ms: med('search_rare_p95') },
            twoWords: { p50Ms: med('search_twoWords_p50'), p95Ms: med('search_twoWords_p95') },
            common: { p50Ms: med('search_common_p50'), p95Ms: med('search_common_p95') },
            targetP95Ms: 100,
            explain,
          },
          itemsList: {
            overHttp: true,
            pageSize: 50,
            firstPageP95Ms: med('items_first_p95'),
            lastPageP95Ms: med('items_last_p95'),
            targetP95Ms: 20,
          },
          pageMove: {
            pagesPerItem: PAGES_PER_ITEM,
            p50Ms: med('page_move_p50'),
            p95Ms: med('page_move_p95'),
          },
          perRun: runs.map((r) =>
            Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v)])),
          ),
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    http.close();
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
