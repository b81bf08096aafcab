import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { buildImageDerivatives } from '../../activities/maintenance';
import { createLocalBlobStore } from '../../blobs';
import { migrate } from '../../db/migrate';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { manifestoTiff } from '../../test/support/tiffMasters';
import { file, uploadRequest } from '../../test/support/uploadFixtures';

/**
 * V7 (JSON on stdout): the page view's first paint of a 12 MP TIFF page (the manifesto scan,
 * 2745 x 4445, LZW) in Debian's Chromium against `next start`, drawn through the Image API at
 * the size shown, beside downloading the full master (what the console sent before, and what
 * Chromium could not draw). Measured before the pyramidal derivative exists (the Image API
 * renders from the master) and after. Each figure is the median of BENCH_RUNS fresh tabs.
 *
 *   npx tsx bench/review/firstPaint.ts        (BENCH_RUNS=5)
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ADMIN = process.env.QUIRE_BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Evaluated in the tab as text: the page image's Largest Contentful Paint and when its bytes
 * arrived (from navigation start), its size on the wire and its width. Text, not a function,
 * because tsx would wrap a function's inner names in a helper the page does not have.
 */
const PAINT_OF_PAGE_IMAGE = `new Promise((resolve) => {
  const img = document.querySelector('figure.canvas img');
  const report = () => {
    const entry = performance.getEntriesByType('resource').find((e) => e.name === img.currentSrc);
    new PerformanceObserver((list) => {
      const paints = list.getEntries().filter((e) => e.element === img);
      if (paints.length === 0) return;
      resolve({
        paintMs: paints[paints.length - 1].startTime,
        loadedMs: entry ? entry.responseEnd : 0,
        bytes: entry ? entry.encodedBodySize : 0,
        width: img.naturalWidth,
      });
    }).observe({ type: 'largest-contentful-paint', buffered: true });
  };
  if (img.complete && img.naturalWidth > 0) report();
  else img.addEventListener('load', report, { once: true });
})`;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)]! * 10) / 10;
};

async function main() {
  // The browser and web-server helpers of the tests name their folder by `__dirname`, which
  // vitest gives them and an ES module run by tsx does not: it is given here, before they load.
  (globalThis as { __dirname?: string }).__dirname = fileURLToPath(
    new URL('../../test/support', import.meta.url),
  );
  const { launchBrowser } = await import('../../test/support/browser');
  const { buildWeb, removeWebBuild, startWeb } = await import('../../test/support/webServer');
  const name = `quire_bench_paint_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  await migrate(databaseUrl);
  const pool = new pg.Pool({ connectionString: databaseUrl });
  const blobDir = await mkdtemp(join(tmpdir(), 'quire-bench-paint-'));
  const blobStore = createLocalBlobStore(blobDir);
  const { workspace, apiKey } = await createWorkspace(pool, 'Bench first paint');
  const master = await manifestoTiff(1);
  const ingested = await ingestBatch(
    { pool, blobStore },
    workspace.id,
    uploadRequest([{ name: 'itemId', value: 'paint' }, file(master, 'manifesto.tif')]),
  );
  const pageId = ingested.pages[0]!.pageId;

  const distDir = await buildWeb();
  const web = await startWeb(distDir, {
    DATABASE_URL: databaseUrl,
    QUIRE_SECRET_KEY: randomBytes(32).toString('hex'),
    QUIRE_BLOB_DIR: blobDir,
    LOG_LEVEL: 'warn',
  });
  const browser = await launchBrowser();
  try {
    const context = await browser.newContext({
      baseURL: web.url,
      viewport: { width: 1280, height: 900 },
    });
    const signin = await context.newPage();
    await signin.goto('/signin');
    await signin.getByLabel('Workspace API key').fill(apiKey);
    await signin.keyboard.press('Enter');
    await signin.waitForURL((u) => !u.pathname.startsWith('/signin'));
    await signin.close();

    /** One fresh tab: navigation start to the page image drawn, and its bytes. */
    const pageView = async () => {
      const tab = await context.newPage();
      // Cold every time: the Image API's answers are cacheable for an hour.
      const cdp = await context.newCDPSession(tab);
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
      await tab.goto(`/pages/${pageId}`);
      const figures = (await tab.evaluate(PAINT_OF_PAGE_IMAGE)) as {
        paintMs: number;
        loadedMs: number;
        bytes: number;
        width: number;
      };
      await tab.close();
      return figures;
    };
    /** The full master through the console's media route, as the page view fetched it before. */
    const masterDownload = async () => {
      const tab = await context.newPage();
      await tab.goto('/jobs');
      const figures = await tab.evaluate(async (id) => {
        const started = performance.now();
        const body = await (
          await fetch(`/console-api/pages/${id}/media`, { cache: 'no-store' })
        ).arrayBuffer();
        return { ms: performance.now() - started, bytes: body.byteLength };
      }, pageId);
      await tab.close();
      return figures;
    };
    const measure = async () => {
      const views = [];
      const downloads = [];
      for (let i = 0; i < RUNS; i++) {
        views.push(await pageView());
        downloads.push(await masterDownload());
      }
      return {
        pageViewFirstPaintMs: median(views.map((v) => v.paintMs)),
        pageViewImageLoadedMs: median(views.map((v) => v.loadedMs)),
        pageViewImageBytes: views[0]!.bytes,
        pageViewImageWidth: views[0]!.width,
        masterDownloadMs: median(downloads.map((d) => d.ms)),
        masterBytes: downloads[0]!.bytes,
      };
    };
    const fromMaster = await measure();
    await buildImageDerivatives({ pool, blobStore });
    const fromDerivative = await measure();
    process.stdout.write(
      `${JSON.stringify(
        {
          benchmark: 'review-first-paint',
          page: { format: 'tiff', width: 2745, height: 4445, megapixels: 12.2 },
          runs: RUNS,
          beforeDerivative: fromMaster,
          withDerivative: fromDerivative,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await browser.close();
    await web.stop();
    removeWebBuild(distDir);
    await pool.end();
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
    await rm(blobDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
