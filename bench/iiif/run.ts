import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { migrate } from '../../db/migrate';
import { median, percentile, round } from '../lib/stack';

/**
 * I4 Image API benchmark (JSON on stdout, also bench/iiif/last-run.json): tile requests over
 * HTTP (loopback, the route handler behind a plain Node server, as the browser test serves
 * it) on two masters: the real manifesto scan as it is (a 2745 x 4445 two-level PNG) and a TIFF
 * master made from it (RGB, LZW, strips; `BENCH_TIFF_SCALE` times its size, default 2: 5490 x
 * 8890, 48.8 MP). For each, in each of `BENCH_RUNS` runs (default 3, fresh uploads each run):
 *
 *  - master: tiles answered before the derivative exists (decoded from the master);
 *  - build: the pyramidal derivative's build time (decode, pyramid, store), per megapixel;
 *  - cold: each tile's first request once the derivative was just made;
 *  - warm: the same tiles asked again (`BENCH_WARM_PASSES` passes, default 3).
 *
 * Tiles are the ones OpenSeadragon asks for (256 px, scale factors 1, 2 and 4), `BENCH_TILES`
 * of them (default 40) spread over the page. Medians of the runs' p50/p95. Targets: warm p95
 * under 50 ms, cold under 500 ms.
 *
 *   npx tsx bench/iiif/run.ts
 *
 * Route modules import `server-only`, which resolves only inside Next, so the script re-runs
 * itself with `bench/lib/serverOnly.ts` loaded first.
 */
if (!process.execArgv.some((a) => a.includes('serverOnly'))) {
  const self = fileURLToPath(import.meta.url);
  const hook = fileURLToPath(new URL('../lib/serverOnly.ts', import.meta.url));
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--import', hook, self], {
    stdio: 'inherit',
    env: process.env,
  });
  process.exit(run.status ?? 1);
}

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const TILES = Number(process.env.BENCH_TILES ?? 40);
const WARM_PASSES = Number(process.env.BENCH_WARM_PASSES ?? 3);
const TIFF_SCALE = Number(process.env.BENCH_TIFF_SCALE ?? 2);
const ADMIN = process.env.QUIRE_BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

type Handler = (
  request: Request,
  context: { params: Promise<Record<string, string>> },
) => Promise<Response>;

const stats = (values: number[]) => ({
  samples: values.length,
  p50Ms: round(percentile(values, 50), 2),
  p95Ms: round(percentile(values, 95), 2),
});

/** OpenSeadragon's tile paths for an image: 256-px tiles at scale factors 1, 2 and 4, spread out. */
function tilePaths(width: number, height: number, count: number): string[] {
  const paths: string[] = [];
  let seed = 17;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (let i = 0; i < count; i++) {
    const scale = [1, 2, 4][i % 3]!;
    const span = 256 * scale;
    const columns = Math.ceil(width / span);
    const rows = Math.ceil(height / span);
    const x = Math.floor(next() * columns) * span;
    const y = Math.floor(next() * rows) * span;
    const w = Math.min(span, width - x);
    const h = Math.min(span, height - y);
    paths.push(`${x},${y},${w},${h}/${Math.ceil(w / scale)},/0/default.jpg`);
  }
  return paths;
}

async function main() {
  const name = `quire_bench_iiif_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  await migrate(databaseUrl);
  const blobDir = await mkdtemp(join(tmpdir(), 'quire-bench-iiif-'));

  const { parseConfig } = await import('../../core/config');
  const server = await import('../../web/lib/server');
  const { createLocalBlobStore } = await import('../../blobs');
  const { createWorkspace } = await import('../../db/workspaces');
  const { publishPage } = await import('../../db/pages');
  const { ingestBatch } = await import('../../ingest/batch');
  const { pagesNeedingDerivative } = await import('../../db/derivatives');
  const { makePageDerivative } = await import('../../blobs/derivatives');
  const { MANIFESTO_PAGE } = await import('../../test/support/fixtures');
  const { manifestoTiff } = await import('../../test/support/tiffMasters');
  const { uploadRequest, file } = await import('../../test/support/uploadFixtures');
  const imageRoute = (await import(
    '../../web/app/iiif/[ws]/image/[pageId]/[region]/[size]/[rotation]/[file]/route'
  )) as unknown as Record<string, Handler>;

  const http = createServer((req: IncomingMessage, res) => {
    const m = /^\/iiif\/(\d+)\/image\/(\d+)\/([^/]+)\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(
      req.url ?? '',
    );
    void (async () => {
      if (!m) {
        res.statusCode = 404;
        res.end();
        return;
      }
      const response = await imageRoute.GET!(new Request(`http://bench${req.url}`), {
        params: Promise.resolve({
          ws: m[1]!,
          pageId: m[2]!,
          region: m[3]!,
          size: m[4]!,
          rotation: m[5]!,
          file: m[6]!,
        }),
      });
      res.statusCode = response.status;
      for (const [k, v] of response.headers) res.setHeader(k, v);
      res.end(Buffer.from(await response.arrayBuffer()));
    })();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  server.configureWeb(
    parseConfig({
      DATABASE_URL: databaseUrl,
      QUIRE_SECRET_KEY: 'bench-iiif-secret-key-0123456789abcdef',
      QUIRE_PUBLIC_URL: base,
      QUIRE_BLOB_DIR: blobDir,
    }),
  );
  const pool = server.pool();
  const blobStore = createLocalBlobStore(blobDir);
  const ws = (await createWorkspace(pool, 'bench')).workspace.id;

  const masters = {
    manifestoPng: { bytes: readFileSync(MANIFESTO_PAGE), filename: 'manifesto-page-0015.png' },
    tiff: { bytes: await manifestoTiff(TIFF_SCALE), filename: 'manifesto-0015.tif' },
  };

  async function timeTiles(pageId: number, paths: string[], expectSource: string) {
    const times: number[] = [];
    for (const path of paths) {
      const started = performance.now();
      const response = await fetch(`${base}/iiif/${ws}/image/${pageId}/${path}`);
      await response.arrayBuffer();
      times.push(performance.now() - started);
      if (
        response.status !== 200 ||
        response.headers.get('x-quire-image-source') !== expectSource
      ) {
        throw new Error(
          `tile ${path}: ${response.status} from ${response.headers.get('x-quire-image-source')}`,
        );
      }
    }
    return times;
  }

  interface MasterFigures {
    buildMsPerMegapixel: number;
    fromMaster: { p50Ms: number; p95Ms: number };
    cold: { p50Ms: number; p95Ms: number };
    warm: { p50Ms: number; p95Ms: number };
  }
  const runs: Array<Record<string, MasterFigures & Record<string, unknown>>> = [];
  for (let run = 0; run < RUNS; run++) {
    const result: Record<string, MasterFigures & Record<string, unknown>> = {};
    for (const [label, master] of Object.entries(masters)) {
      const ingested = await ingestBatch(
        { pool, blobStore, publicBaseUrl: base },
        ws,
        uploadRequest([
          { name: 'itemId', value: `${label}-${run}` },
          file(master.bytes, master.filename),
        ]),
      );
      const pageId = ingested.pages[0]!.pageId;
      await publishPage(pool, { workspaceId: ws, pageId, expectedRevision: 0 });
      const { rows } = await pool.query('SELECT width, height FROM pages WHERE id = $1', [pageId]);
      const { width, height } = rows[0] as { width: number; height: number };
      const paths = tilePaths(width, height, TILES);
      // Before the derivative: at most a dozen tiles, each decodes the master.
      const fromMaster = await timeTiles(pageId, paths.slice(0, 12), 'master');
      const candidate = (await pagesNeedingDerivative(pool, new Date(), 1000)).find(
        (p) => p.pageId === pageId,
      )!;
      const built = await makePageDerivative({ pool, blobStore }, candidate);
      if (built.kind !== 'made') throw new Error(`derivative not made: ${built.code}`);
      const cold = await timeTiles(pageId, paths, 'derivative');
      const warm: number[] = [];
      for (let pass = 0; pass < WARM_PASSES; pass++) {
        warm.push(...(await timeTiles(pageId, paths, 'derivative')));
      }
      result[label] = {
        width,
        height,
        megapixels: round((width * height) / 1e6, 2),
        masterBytes: master.bytes.length,
        derivativeBytes: built.sizeBytes,
        buildMs: round(built.buildMs, 1),
        buildMsPerMegapixel: round(built.buildMs / built.megapixels, 1),
        fromMaster: stats(fromMaster),
        cold: stats(cold),
        warm: stats(warm),
      };
    }
    runs.push(result);
  }

  const medianOf = (label: string, pick: (r: MasterFigures) => number) =>
    round(median(runs.map((r) => pick(r[label]!))), 2);
  const summary: Record<string, unknown> = {};
  for (const label of Object.keys(masters)) {
    summary[label] = {
      buildMsPerMegapixel: medianOf(label, (r) => r.buildMsPerMegapixel),
      fromMasterP50Ms: medianOf(label, (r) => r.fromMaster.p50Ms),
      fromMasterP95Ms: medianOf(label, (r) => r.fromMaster.p95Ms),
      coldP50Ms: medianOf(label, (r) => r.cold.p50Ms),
      coldP95Ms: medianOf(label, (r) => r.cold.p95Ms),
      warmP50Ms: medianOf(label, (r) => r.warm.p50Ms),
      warmP95Ms: medianOf(label, (r) => r.warm.p95Ms),
      // The baseline, measured in the same run: a tile from the master over one from the derivative.
      masterOverWarmP50: round(
        medianOf(label, (r) => r.fromMaster.p50Ms) / medianOf(label, (r) => r.warm.p50Ms),
        1,
      ),
    };
  }
  const targets = Object.fromEntries(
    Object.entries(summary).map(([label, s]) => {
      const v = s as { warmP95Ms: number; coldP95Ms: number };
      return [label, { warmP95Under50Ms: v.warmP95Ms < 50, coldP95Under500Ms: v.coldP95Ms < 500 }];
    }),
  );
  const json = JSON.stringify(
    {
      benchmark: 'iiif-image-api',
      date: new Date().toISOString(),
      machine: 'shared (2 cores, other work running); figures are noisy',
      settings: { runs: RUNS, tiles: TILES, warmPasses: WARM_PASSES, tiffScale: TIFF_SCALE },
      summary,
      targets,
      runs,
    },
    null,
    2,
  );
  console.log(json);
  writeFileSync(new URL('./last-run.json', import.meta.url), `${json}\n`);

  await new Promise<void>((resolve) => http.close(() => resolve()));
  await pool.end();
  await rm(blobDir, { recursive: true, force: true });
  const drop = new pg.Client({ connectionString: ADMIN });
  await drop.connect();
  await drop.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await drop.end();
  await admin.end();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
