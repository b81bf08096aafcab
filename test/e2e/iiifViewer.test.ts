import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildImageDerivatives } from '../../activities/maintenance';
import { createLocalBlobStore } from '../../blobs';
import { parseConfig } from '../../core/config';
import { publishPage } from '../../db/pages';
import { ingestBatch } from '../../ingest/batch';
import { configureWeb } from '../../web/lib/server';
import { ARTIFACTS, launchBrowser } from '../support/browser';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { KANT } from '../support/interchange';
import { manifestoTiff } from '../support/tiffMasters';
import { uploadRequest } from '../support/uploadFixtures';

/**
 * I1 in a real IIIF viewer: Mirador, as installed from npm (its UMD build), in Debian's
 * Chromium, opens the manifest Quire serves for a published page (the Kant 1784 page with its
 * imported OCR-D ground truth) and shows the page image and a transcript line. I4: it opens a
 * TIFF master's manifest (the real manifesto scan as a multi-megapixel TIFF) and deep-zooms
 * through the Image API's tiles. The IIIF routes run in-process behind a plain Node HTTP
 * server (the same handlers `next start` serves).
 */

type Handler = (
  request: Request,
  context: { params: Promise<Record<string, string>> },
) => Promise<Response>;

let db: TestDatabase;
let dir: string;
let server: Server;
let base: string;
let browser: Browser;
let manifestUrl: string;
let tiffManifestUrl: string;
let viewerManifest: string;
const requests: Array<{ url: string; status: number }> = [];

const miradorJs = readFileSync(
  // The package's CommonJS entry is its UMD build, dist/mirador.min.js.
  createRequire(__filename).resolve('mirador'),
);

function viewerPage(manifest: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Quire in Mirador</title></head>
<body style="margin:0">
<div id="viewer" style="position:absolute;inset:0"></div>
<script src="/mirador.min.js"></script>
<script>
  Mirador.viewer({
    id: 'viewer',
    // Quire's transcript lines are "supplementing" annotations; Mirador lists only the
    // motivations named here.
    annotations: { filteredMotivations: ['oa:commenting', 'commenting', 'supplementing'] },
    window: { sideBarOpen: true, sideBarPanel: 'annotations', allowClose: false },
    windows: [{ manifestId: ${JSON.stringify(manifest)} }],
  });
</script>
</body></html>`;
}

async function toWebRequest(req: IncomingMessage): Promise<Request> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
  }
  return new Request(`${base}${req.url}`, { method: req.method, headers });
}

async function send(res: ServerResponse, response: Response) {
  res.statusCode = response.status;
  for (const [name, value] of response.headers) res.setHeader(name, value);
  res.end(Buffer.from(await response.arrayBuffer()));
}

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'quire-mirador-'));
  const manifestRoute = (await import(
    '../../web/app/iiif/[ws]/[item]/manifest/route'
  )) as unknown as Record<string, Handler>;
  const mediaRoute = (await import(
    '../../web/app/iiif/[ws]/[item]/canvas/[pageId]/media/route'
  )) as unknown as Record<string, Handler>;
  const infoRoute = (await import(
    '../../web/app/iiif/[ws]/image/[pageId]/info.json/route'
  )) as unknown as Record<string, Handler>;
  const imageRoute = (await import(
    '../../web/app/iiif/[ws]/image/[pageId]/[region]/[size]/[rotation]/[file]/route'
  )) as unknown as Record<string, Handler>;
  server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    void (async () => {
      if (path === '/mirador.min.js') {
        res.setHeader('Content-Type', 'text/javascript');
        res.end(miradorJs);
        return;
      }
      if (path === '/viewer') {
        res.setHeader('Content-Type', 'text/html; charset=utf-8');
        res.end(viewerPage(viewerManifest));
        return;
      }
      const info = /^\/iiif\/([^/]+)\/image\/([^/]+)\/info\.json$/.exec(path);
      const image = /^\/iiif\/([^/]+)\/image\/([^/]+)\/([^/]+)\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(
        path,
      );
      const manifest = /^\/iiif\/([^/]+)\/([^/]+)\/manifest$/.exec(path);
      const media = /^\/iiif\/([^/]+)\/([^/]+)\/canvas\/([^/]+)\/media$/.exec(path);
      const handler = info
        ? infoRoute[req.method!]
        : image
          ? imageRoute[req.method!]
          : manifest
            ? manifestRoute[req.method!]
            : media
              ? mediaRoute[req.method!]
              : undefined;
      const params: Record<string, string> | undefined = info
        ? { ws: info[1]!, pageId: info[2]! }
        : image
          ? {
              ws: image[1]!,
              pageId: image[2]!,
              region: image[3]!,
              size: image[4]!,
              rotation: image[5]!,
              file: image[6]!,
            }
          : manifest
            ? { ws: manifest[1]!, item: manifest[2]! }
            : media
              ? { ws: media[1]!, item: media[2]!, pageId: media[3]! }
              : undefined;
      if (!handler || !params) {
        res.statusCode = 404;
        res.end();
        return;
      }
      await send(res, await handler(await toWebRequest(req), { params: Promise.resolve(params) }));
    })().catch(() => {
      res.statusCode = 500;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'mirador-test-secret-key-0123456789abcdef',
      QUIRE_PUBLIC_URL: base,
      QUIRE_BLOB_DIR: dir,
    }),
  );
  const { rows } = await db.pool.query<{ id: number }>(
    "INSERT INTO workspaces (name) VALUES ('Kant archive') RETURNING id",
  );
  const ws = rows[0]!.id;
  // Browsers do not draw TIFF: the page goes in as the same scan in PNG, pixel for pixel.
  const png = join(dir, 'kant_0017.png');
  execFileSync('/usr/bin/convert', [KANT.image, png]);
  const result = await ingestBatch(
    { pool: db.pool, blobStore: createLocalBlobStore(dir), publicBaseUrl: base },
    ws,
    uploadRequest([
      { name: 'itemId', value: 'berlinische-monatsschrift-1784' },
      { name: 'files[]', value: readFileSync(png), filename: 'kant_0017.png' },
      { name: 'transcript', value: readFileSync(KANT.page), filename: 'PAGE_0017_PAGE.xml' },
    ]),
  );
  const pageId = result.pages[0]!.pageId;
  await publishPage(db.pool, { workspaceId: ws, pageId, expectedRevision: 1 });
  manifestUrl = `${base}/iiif/${ws}/berlinische-monatsschrift-1784/manifest`;
  // I4: the TIFF master itself, published, its pyramidal derivative made as the maintenance
  // job makes it.
  const blobStore = createLocalBlobStore(dir);
  const tiff = await ingestBatch(
    { pool: db.pool, blobStore, publicBaseUrl: base },
    ws,
    uploadRequest([
      { name: 'itemId', value: 'manifesto-tiff' },
      { name: 'files[]', value: await manifestoTiff(), filename: 'manifesto-0015.tif' },
    ]),
  );
  await publishPage(db.pool, {
    workspaceId: ws,
    pageId: tiff.pages[0]!.pageId,
    expectedRevision: 0,
  });
  expect(await buildImageDerivatives({ pool: db.pool, blobStore })).toMatchObject({ made: 2 });
  tiffManifestUrl = `${base}/iiif/${ws}/manifesto-tiff/manifest`;
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

describe('I1 a real IIIF viewer', () => {
  it('I1 Mirador opens the published manifest and shows the page image and a transcript line', async () => {
    viewerManifest = manifestUrl;
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await context.newPage();
    page.on('response', (r) => requests.push({ url: r.url(), status: r.status() }));
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    try {
      await page.goto(`${base}/viewer`);
      // The transcript: the annotations panel lists the page's lines.
      await page.getByText('Berliniſche Monatsſchrift.').first().waitFor({ timeout: 60_000 });
      await page.getByText('1784 .').first().waitFor();
      // The image: Mirador read the painting body's Image API service (I4) and OpenSeadragon
      // drew its tiles.
      await expect
        .poll(
          () =>
            requests.some((r) => /\/image\/\d+\/info\.json$/.test(r.url) && r.status === 200) &&
            requests.some(
              (r) => /\/image\/\d+\/[^/]+\/[^/]+\/0\/default\.jpg$/.test(r.url) && r.status === 200,
            ),
          { timeout: 60_000 },
        )
        .toBe(true);
      await expect
        .poll(
          () =>
            page.evaluate(() => {
              const canvas = document.querySelector(
                '.openseadragon-canvas canvas',
              ) as HTMLCanvasElement | null;
              if (!canvas || canvas.width === 0) return 0;
              const data = canvas
                .getContext('2d')!
                .getImageData(0, 0, canvas.width, canvas.height).data;
              let light = 0;
              for (let i = 0; i < data.length; i += 4) {
                if (data[i]! + data[i + 1]! + data[i + 2]! > 450) light++;
              }
              return light / (data.length / 4);
            }),
          { timeout: 60_000 },
        )
        .toBeGreaterThan(0.1);
      expect(requests.find((r) => r.url === manifestUrl)?.status).toBe(200);
      await page.screenshot({ path: join(ARTIFACTS, 'iiif-mirador.png') });
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('I4 Mirador opens a TIFF master through its Image API service and shows tiles at two zoom levels', async () => {
    viewerManifest = tiffManifestUrl;
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await context.newPage();
    const tiles: Array<{ scale: number; status: number; type: string | null }> = [];
    const urls: string[] = [];
    page.on('response', (r) => {
      urls.push(r.url());
      // x,y,w,h/{w},{h}|{w},/0/default.jpg: the scale factor is the region's width over the answer's.
      const m = /\/image\/\d+\/(\d+),(\d+),(\d+),(\d+)\/(\d+),(\d*)\/0\/default\.jpg$/.exec(
        r.url(),
      );
      if (m) {
        tiles.push({
          scale: Math.round(Number(m[3]) / Number(m[5])),
          status: r.status(),
          type: r.headers()['content-type'] ?? null,
        });
      }
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    // Light paper, dark print and the red patch laid on the scan, as drawn on the viewer's canvas.
    const canvasFigures = () =>
      page.evaluate(() => {
        const canvas = document.querySelector(
          '.openseadragon-canvas canvas',
        ) as HTMLCanvasElement | null;
        if (!canvas || canvas.width === 0) return { light: 0, dark: 0, red: 0, sum: 0 };
        const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        let light = 0;
        let dark = 0;
        let red = 0;
        let sum = 0;
        for (let i = 0; i < data.length; i += 4) {
          const [r, g, b] = [data[i]!, data[i + 1]!, data[i + 2]!];
          sum += r + g + b;
          if (r + g + b > 600) light++;
          else if (r + g + b < 150 && data[i + 3]! > 0) dark++;
          if (r > 150 && g < 90 && b < 90) red++;
        }
        const n = data.length / 4;
        return { light: light / n, dark: dark / n, red: red / n, sum };
      });
    try {
      await page.goto(`${base}/viewer`);
      // The whole page at a coarse level: tiles, never the TIFF, and the canvas drawn.
      await expect.poll(() => tiles.length, { timeout: 60_000 }).toBeGreaterThan(0);
      await expect
        .poll(
          async () => {
            const f = await canvasFigures();
            return f.light > 0.1 && f.dark > 0.001 && f.red > 0;
          },
          { timeout: 60_000 },
        )
        .toBe(true);
      const coarse = Math.min(...tiles.map((t) => t.scale));
      expect(coarse).toBeGreaterThan(1);
      const before = await canvasFigures();
      await page.screenshot({ path: join(ARTIFACTS, 'iiif-mirador-tiff-whole.png') });

      // Zoom in on the viewer until it asks for full-resolution tiles.
      const box = (await page.locator('.openseadragon-canvas').first().boundingBox())!;
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await expect
        .poll(
          async () => {
            await page.mouse.wheel(0, -400);
            return Math.min(...tiles.map((t) => t.scale));
          },
          { timeout: 60_000, interval: 500 },
        )
        .toBe(1);
      await expect
        .poll(
          async () => {
            const f = await canvasFigures();
            return f.light > 0.1 && f.dark > 0.001 && f.sum !== before.sum;
          },
          { timeout: 60_000 },
        )
        .toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, 'iiif-mirador-tiff-zoomed.png') });
      expect(new Set(tiles.map((t) => t.scale)).size).toBeGreaterThanOrEqual(2);
      expect(tiles.every((t) => t.status === 200 && t.type === 'image/jpeg')).toBe(true);
      // The master's bytes were never fetched: browsers cannot draw them.
      expect(urls.some((u) => u.includes('/manifesto-tiff/canvas/'))).toBe(false);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
