import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { migrate } from '../../db/migrate';
import { ADMIN_URL, databaseUrl } from '../lib/benchDatabase';
import { type Corpus, LINES_PER_PAGE, loadCorpus, pageLines } from './corpus/pages';

/**
 * D12 / F2 / F3 benchmark (JSON on stdout and in bench/search/last-run-<size>.json): one
 * installation of WORKSPACES (1,000) workspaces grown through BENCH_SIZES pages (default
 * 500,000, 1,000,000, 2,000,000) of text made from public-domain books (corpus/, CORPUS.md).
 * The first workspace keeps BENCH_FIXED_PAGES pages (50,000) at every size, the other 999
 * share the rest, so the fixed workspace's figures show whether a workspace slows down as the
 * installation around it grows (D12: it must not), and a growing workspace's show the rest.
 *
 * At each size, on the fixed workspace and on one growing workspace, median of BENCH_RUNS (3)
 * runs of BENCH_SAMPLES (60) samples each:
 *  1. Search over HTTP with snippets (target p95 < 100 ms) for a rare word (a handful of
 *     pages), two words that meet in the books' lines, and a common word; EXPLAIN of the
 *     statement the API runs (it must probe `pages_search_workspace`).
 *  2. The items list's first and last page over HTTP (F2, target p95 < 20 ms).
 *  3. A page move's transaction, one page to another item of 100 pages and back (F2).
 * Also the bytes a page takes (heap, TOAST, each index) and the load average (`uptime`).
 *
 *   npx tsx bench/search/run.ts
 */
if (!process.execArgv.some((a) => a.includes('react-server'))) {
  const self = fileURLToPath(import.meta.url);
  const run = spawnSync(process.execPath, ['--conditions=react-server', '--import', 'tsx', self], {
    stdio: 'inherit',
    env: process.env,
  });
  process.exit(run.status ?? 1);
}

const SIZES = (process.env.BENCH_SIZES ?? '500000,1000000,2000000').split(',').map(Number);
const FIXED = Number(process.env.BENCH_FIXED_PAGES ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 60);
/** The figures' files: `<BENCH_OUT>-<size>.json` and `<BENCH_OUT>-growth.json`. */
const OUT = process.env.BENCH_OUT ?? 'last-run';
const WORKSPACES = 1000;
const PAGES_PER_ITEM = 100;
const HERE = fileURLToPath(new URL('./', import.meta.url));
if (SIZES.some((s, i) => !Number.isInteger(s) || s <= FIXED || (i > 0 && s <= SIZES[i - 1]!)))
  throw new Error('BENCH_SIZES must grow, each above BENCH_FIXED_PAGES');

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? 0;
}
const round = (n: number) => Math.round(n * 100) / 100;
const median = (values: number[]) => percentile(values, 50);
const uptime = () => spawnSync('uptime', { encoding: 'utf8' }).stdout.trim();
const label = (n: number) => (n % 1_000_000 === 0 ? `${n / 1_000_000}m` : `${n / 1000}k`);
const itemName = (i: number) => `item-${String(i).padStart(5, '0')}`;

/** Where page number `g` lives: the fixed workspace holds 0..FIXED-1, the others the rest. */
function placeOf(g: number, workspaces: number[]) {
  const j = g - FIXED;
  const [ws, local] =
    j < 0
      ? [workspaces[0]!, g]
      : [workspaces[1 + (j % (WORKSPACES - 1))]!, Math.floor(j / (WORKSPACES - 1))];
  return { ws, item: Math.floor(local / PAGES_PER_ITEM), position: local % PAGES_PER_ITEM };
}

/** COPY's text format: backslash, tab, newline and carriage return escaped. */
const copyField = (s: string) =>
  s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');

function pageRow(corpus: Corpus, g: number, workspaces: number[]): string {
  const { ws, item, position } = placeOf(g, workspaces);
  const lines = pageLines(corpus, g);
  const canvas = `http://bench/iiif/${ws}/${itemName(item)}/canvas/${position}`;
  const annotationPage = {
    '@context': 'http://iiif.io/api/presentation/3/context.json',
    id: `http://bench/p/${g}/annotations/r1`,
    type: 'AnnotationPage',
    items: lines.map((value, k) => ({
      id: `http://bench/p/${g}/s${k}`,
      type: 'Annotation',
      motivation: 'supplementing',
      body: { type: 'TextualBody', value, format: 'text/plain' },
      target: `${canvas}#xywh=10,${k * 40},900,36`,
      'quire:index': k,
    })),
  };
  return `${[ws, itemName(item), position, 'image', canvas, 1]
    .map(String)
    .concat([copyField(JSON.stringify(annotationPage)), copyField(lines.join('\n'))])
    .join('\t')}\n`;
}

/** Pages from..to-1 through `streams` COPY sessions of psql, made here as they are sent. */
async function copyPages(
  url: string,
  corpus: Corpus,
  workspaces: number[],
  from: number,
  to: number,
  streams = 2,
): Promise<void> {
  const copies = Array.from({ length: streams }, () => {
    const child = spawn(
      'psql',
      [
        url,
        '-q',
        '-v',
        'ON_ERROR_STOP=1',
        '-c',
        'COPY pages (workspace_id, item_id, position, kind, canvas_uri, revision, annotation_page, search_text) FROM STDIN',
      ],
      { stdio: ['pipe', 'inherit', 'inherit'] },
    );
    const done = new Promise<void>((resolve, reject) =>
      child.on('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`COPY exited ${code}`)),
      ),
    );
    return { child, done };
  });
  const batch = 500;
  let sent = from;
  for (let at = from; at < to; at += batch) {
    const copy = copies[(at / batch) % streams]!;
    let text = '';
    for (let g = at; g < Math.min(to, at + batch); g++) text += pageRow(corpus, g, workspaces);
    if (!copy.child.stdin.write(text))
      await new Promise((resolve) => copy.child.stdin.once('drain', resolve));
    sent = Math.min(to, at + batch);
    if (sent % 100_000 === 0) process.stderr.write(`seeded ${sent} pages (${uptime()})\n`);
  }
  for (const copy of copies) copy.child.stdin.end();
  await Promise.all(copies.map((c) => c.done));
}

async function main() {
  const corpus = loadCorpus(join(HERE, 'corpus'));
  const name = `quire_bench_search_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = databaseUrl(name);
  await migrate(url);

  const { addApiKey } = await import('../../db/workspaces');
  const { listItemPages } = await import('../../db/items');
  const { arrangeItemPages } = await import('../../db/itemPages');
  const { configsInUse, searchStatement } = await import('../../db/search');
  const { encodePageToken } = await import('../../core/pageToken');
  const { parseConfig } = await import('../../core/config');
  const server = await import('../../web/lib/server');
  server.configureWeb(
    parseConfig({ DATABASE_URL: url, QUIRE_SECRET_KEY: randomBytes(32).toString('hex') }),
  );
  const searchRoute = await import('../../web/app/api/v1/workspaces/[ws]/search/route');
  const itemsRoute = await import('../../web/app/api/v1/workspaces/[ws]/items/route');
  const pool = server.pool();
  // The bench's own statements (loads, counts, sizes, EXPLAIN) in a session without the API
  // pool's bound on a statement (D7).
  const maint = new pg.Client({ connectionString: url });
  await maint.connect();

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
    const { rows: created } = await pool.query<{ id: string }>(
      `INSERT INTO workspaces (name) SELECT 'bench ' || i FROM generate_series(1, ${WORKSPACES}) i RETURNING id`,
    );
    const workspaces = created.map((r) => Number(r.id)).sort((a, b) => a - b);
    const fixed = workspaces[0]!;
    const growing = workspaces[1]!;
    const keys = new Map([
      [fixed, await addApiKey(pool, fixed, 'bench')],
      [growing, await addApiKey(pool, growing, 'bench')],
    ]);
    const curve: Array<Record<string, unknown>> = [];
    let queries: { rare: string; twoWords: string; common: string } | null = null;
    let seeded = 0;

    for (const size of SIZES) {
      const uptimeBefore = uptime();
      const loadStarted = performance.now();
      // Items first (pages refer to them), then the pages, then the index built once over
      // them all, as a restore would.
      const lastItem = (g: number) => placeOf(g, workspaces).item;
      await maint.query(
        `INSERT INTO items (workspace_id, id, title)
         SELECT $1::bigint, 'item-' || lpad(i::text, 5, '0'), 'Volume ' || i FROM generate_series(0, $2::int) i
         ON CONFLICT DO NOTHING`,
        [fixed, lastItem(Math.min(size, FIXED) - 1)],
      );
      await maint.query(
        `INSERT INTO items (workspace_id, id, title)
         SELECT w, 'item-' || lpad(i::text, 5, '0'), 'Volume ' || i
           FROM unnest($1::bigint[]) w, generate_series(0, $2::int) i
         ON CONFLICT DO NOTHING`,
        [workspaces.slice(1), lastItem(size - 1)],
      );
      await maint.query('DROP INDEX IF EXISTS pages_search_workspace');
      await copyPages(url, corpus, workspaces, seeded, size);
      seeded = size;
      const loadSeconds = (performance.now() - loadStarted) / 1000;
      const indexStarted = performance.now();
      let indexSeconds = 0;
      // Its own session: the API pool bounds every statement (D7), a build of the index is not.
      const indexClient = new pg.Client({ connectionString: url });
      await indexClient.connect();
      try {
        await indexClient.query("SET maintenance_work_mem = '1GB'");
        await indexClient.query(
          `CREATE INDEX pages_search_workspace ON pages
             USING gin (quire_workspace_lexemes(workspace_id, search_tsv)) WHERE deleted_at IS NULL`,
        );
        indexSeconds = (performance.now() - indexStarted) / 1000;
        // What autovacuum does after a load: statistics and the visibility map.
        await indexClient.query('VACUUM ANALYZE pages');
        await indexClient.query('VACUUM ANALYZE items');
      } finally {
        await indexClient.end();
      }
      const vacuumSeconds = (performance.now() - indexStarted) / 1000 - indexSeconds;

      const { rows: sizes } = await maint.query(
        `SELECT pg_relation_size('pages') AS heap,
                pg_total_relation_size('pages') - pg_relation_size('pages') - pg_indexes_size('pages') AS toast,
                pg_relation_size('pages_search_workspace') AS search_index,
                pg_indexes_size('pages') AS all_indexes,
                pg_total_relation_size('pages') AS total,
                pg_database_size(current_database()) AS database`,
      );
      const bytes = Object.fromEntries(Object.entries(sizes[0]).map(([k, v]) => [k, Number(v)]));
      const perPage = Object.fromEntries(
        Object.entries(bytes).map(([k, v]) => [k, Math.round(v / size)]),
      );

      const matchCount = async (ws: number, q: string) => {
        const { rows } = await maint.query(
          `SELECT count(*)::int AS n FROM pages
            WHERE quire_workspace_lexemes(workspace_id, search_tsv) @> quire_query_lexemes($1::bigint, 'simple', $2)
              AND workspace_id = $1 AND deleted_at IS NULL AND search_tsv @@ plainto_tsquery('simple', $2)`,
          [ws, q],
        );
        return rows[0].n as number;
      };
      // The queries, chosen once from the fixed workspace (which never changes) by fixed rules.
      if (!queries) {
        const common = corpus.words.find((w) => w.length >= 5)!;
        let rare = '';
        for (let r = 100_000; r < corpus.words.length && !rare; r += 97) {
          const n = await matchCount(fixed, corpus.words[r]!);
          if (n >= 1 && n <= 5) rare = corpus.words[r]!;
        }
        const rank = new Map(corpus.words.map((w, i) => [w, i]));
        const pairs: string[] = [];
        for (const excerpt of corpus.excerpts) {
          const words =
            excerpt
              .join(' ')
              .toLowerCase()
              .match(/\p{L}+/gu) ?? [];
          for (let i = 0; i + 1 < words.length && pairs.length < 40; i++) {
            const [a, b] = [words[i]!, words[i + 1]!];
            const ok = (w: string) =>
              w.length >= 4 && (rank.get(w) ?? 0) >= 200 && (rank.get(w) ?? 0) < 5000;
            if (ok(a) && ok(b) && a !== b) {
              pairs.push(`${a} ${b}`);
              break;
            }
          }
          if (pairs.length >= 40) break;
        }
        let twoWords = pairs[0]!;
        let most = -1;
        for (const pair of pairs) {
          const n = await matchCount(fixed, pair);
          if (n > most) [twoWords, most] = [pair, n];
        }
        queries = { rare, twoWords, common };
      }
      const { rows: vocabulary } = await maint.query(
        `SELECT count(*)::int AS n FROM ts_stat($$SELECT search_tsv FROM pages WHERE workspace_id = ${fixed}$$)`,
      );

      const timed = async (ws: number, path: string) => {
        const started = performance.now();
        const response = await fetch(`${base}${path}`, {
          headers: { authorization: `Bearer ${keys.get(ws)}` },
        });
        const body = await response.text();
        const elapsed = performance.now() - started;
        if (response.status !== 200)
          throw new Error(`${path} answered ${response.status}: ${body}`);
        return elapsed;
      };
      const sample = async (ws: number, path: string) => {
        for (let i = 0; i < 5; i++) await timed(ws, path); // warm-up
        const times: number[] = [];
        for (let i = 0; i < SAMPLES; i++) times.push(await timed(ws, path));
        return times;
      };

      const explainOf = async (ws: number, q: string) => {
        const statement = searchStatement(ws, { q, limit: 20 }, await configsInUse(pool, ws));
        const explained = await maint.query({
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
          executionMs: round(Number(root['Execution Time'])),
        };
      };

      const secret = server.config().QUIRE_SECRET_KEY;
      const workspaceFigures = async (ws: number, pages: number, f2: boolean) => {
        const items = Math.ceil(pages / PAGES_PER_ITEM);
        const matchingPages: Record<string, number> = {};
        const explain: Record<string, Awaited<ReturnType<typeof explainOf>>> = {};
        for (const [kind, q] of Object.entries(queries!)) {
          matchingPages[kind] = await matchCount(ws, q);
          explain[kind] = await explainOf(ws, q);
        }
        const lastToken = encodePageToken(
          secret,
          { workspaceId: ws, scope: 'items', filter: { collection: null } },
          itemName(items - 51),
        );
        const runs: Array<Record<string, number>> = [];
        for (let run = 0; run < RUNS; run++) {
          const figures: Record<string, number> = {};
          for (const [kind, q] of Object.entries(queries!)) {
            const times = await sample(
              ws,
              `/api/v1/workspaces/${ws}/search?q=${encodeURIComponent(q)}&limit=20`,
            );
            figures[`search_${kind}_p50`] = percentile(times, 50);
            figures[`search_${kind}_p95`] = percentile(times, 95);
          }
          runs.push(figures);
          if (!f2) continue;
          const first = await sample(ws, `/api/v1/workspaces/${ws}/items?pageSize=50`);
          const last = await sample(
            ws,
            `/api/v1/workspaces/${ws}/items?pageSize=50&pageToken=${encodeURIComponent(lastToken)}`,
          );
          figures.items_first_p95 = percentile(first, 95);
          figures.items_last_p95 = percentile(last, 95);
          // Page moves: a page of item A to the end of item B and back (an even number of
          // moves, so the workspace is as it was for the next size).
          const a = itemName(run * 2 + 1);
          const b = itemName(run * 2 + 2);
          const moves: number[] = [];
          for (let i = 0; i < Math.max(10, 2 * Math.floor(SAMPLES / 4)); i++) {
            const [from, to] = i % 2 === 0 ? [a, b] : [b, a];
            const source = await listItemPages(pool, ws, from);
            const target = await listItemPages(pool, ws, to);
            const moving = source[source.length - 1]!.pageId;
            const started = performance.now();
            await arrangeItemPages(pool, { kind: 'cli' }, ws, to, [
              ...target.map((p) => p.pageId),
              moving,
            ]);
            moves.push(performance.now() - started);
          }
          figures.page_move_p50 = percentile(moves, 50);
          figures.page_move_p95 = percentile(moves, 95);
          process.stderr.write(
            `${label(size)} ws ${ws} run ${run + 1}: ${JSON.stringify(figures)}\n`,
          );
        }
        const med = (key: string) => round(median(runs.map((r) => r[key]!)));
        return {
          pages,
          items,
          search: {
            matchingPages,
            rare: { p50Ms: med('search_rare_p50'), p95Ms: med('search_rare_p95') },
            twoWords: { p50Ms: med('search_twoWords_p50'), p95Ms: med('search_twoWords_p95') },
            common: { p50Ms: med('search_common_p50'), p95Ms: med('search_common_p95') },
            explain,
          },
          // The F2 figures only where they were measured (the fixed workspace).
          ...(f2 && {
            itemsList: {
              firstPageP95Ms: med('items_first_p95'),
              lastPageP95Ms: med('items_last_p95'),
            },
            pageMove: { p50Ms: med('page_move_p50'), p95Ms: med('page_move_p95') },
          }),
          perRun: runs.map((r) =>
            Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v)])),
          ),
        };
      };

      const { rows: growingCount } = await maint.query(
        'SELECT count(*)::int AS n FROM pages WHERE workspace_id = $1',
        [growing],
      );
      const measuredUptime = uptime();
      const figures = {
        bench: 'search',
        machine: `shared 2 cores (other work ran beside it), PostgreSQL shared_buffers ${
          (await maint.query('SHOW shared_buffers')).rows[0].shared_buffers
        }`,
        corpus: 'bench/search/corpus (CORPUS.md): 3,025 Project Gutenberg books',
        installationPages: size,
        workspaces: WORKSPACES,
        linesPerPage: LINES_PER_PAGE,
        loadSeconds: Math.round(loadSeconds),
        indexSeconds: Math.round(indexSeconds),
        vacuumSeconds: Math.round(vacuumSeconds),
        bytes,
        bytesPerPage: perPage,
        fixedWorkspaceDistinctLexemes: vocabulary[0].n,
        queries,
        overHttp: true,
        limit: 20,
        targets: { searchP95Ms: 100, itemsListP95Ms: 20 },
        runs: RUNS,
        samplesPerRun: SAMPLES,
        uptime: { beforeLoad: uptimeBefore, beforeMeasure: measuredUptime },
        fixedWorkspace: await workspaceFigures(fixed, FIXED, true),
        growingWorkspace: await workspaceFigures(growing, growingCount[0].n, false),
        uptimeAfterMeasure: uptime(),
        loadAverage1m: round(loadavg()[0]!),
      };
      const text = `${JSON.stringify(figures, null, 2)}\n`;
      process.stdout.write(text);
      writeFileSync(join(HERE, `${OUT}-${label(size)}.json`), text);
      curve.push({
        installationPages: size,
        uptime: measuredUptime,
        bytesPerPage: perPage.total,
        searchIndexBytesPerPage: perPage.search_index,
        fixed: {
          pages: FIXED,
          rareP95Ms: figures.fixedWorkspace.search.rare.p95Ms,
          twoWordsP95Ms: figures.fixedWorkspace.search.twoWords.p95Ms,
          commonP95Ms: figures.fixedWorkspace.search.common.p95Ms,
          // The statement alone in PostgreSQL (EXPLAIN ANALYZE), less shaken by the load.
          statementMs: Object.fromEntries(
            Object.entries(figures.fixedWorkspace.search.explain).map(([k, e]) => [
              k,
              e.executionMs,
            ]),
          ),
        },
        growing: {
          pages: growingCount[0].n,
          rareP95Ms: figures.growingWorkspace.search.rare.p95Ms,
          twoWordsP95Ms: figures.growingWorkspace.search.twoWords.p95Ms,
          commonP95Ms: figures.growingWorkspace.search.common.p95Ms,
        },
      });
      writeFileSync(
        join(HERE, `${OUT}-growth.json`),
        `${JSON.stringify({ bench: 'search', queries, curve }, null, 2)}\n`,
      );
    }
  } finally {
    http.close();
    await maint.end();
    await pool.end();
    if (!process.env.BENCH_KEEP_DATABASE)
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
