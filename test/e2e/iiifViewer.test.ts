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
import { createLocalBlobStore } from '../../blobs';
import { parseConfig } from '../../core/config';
import { publishPage } from '../../db/pages';
import { ingestBatch } from '../../ingest/batch';
import { configureWeb } from '../../web/lib/server';
import { ARTIFACTS, launchBrowser } from '../support/browser';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { KANT } from '../support/interchange';
import { uploadRequest } from '../support/uploadFixtures';

/**
 * I1 in a real IIIF viewer: Mirador, as installed from npm (its UMD build), in Debian's
 * Chromium, opens the manifest Quire serves for a published page (the Kant 1784 page with its
 * imported OCR-D ground truth) and shows the page image and a transcript line. The IIIF routes
 * run in-process behind a plain Node HTTP server (the same handlers `next start` serves).
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
        res.end(viewerPage(manifestUrl));
        return;
      }
      const manifest = /^\/iiif\/([^/]+)\/([^/]+)\/manifest$/.exec(path);
      const media = /^\/iiif\/([^/]+)\/([^/]+)\/canvas\/([^/]+)\/media$/.exec(path);
      const handler = manifest
        ? manifestRoute[req.method!]
        : media
          ? mediaRoute[req.method!]
          : undefined;
      const params: Record<string, string> | undefined = manifest
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
      // The image: Mirador fetched the canvas's painting body and OpenSeadragon drew it.
      await expect
        .poll(() => requests.some((r) => r.url.endsWith('/media') && r.status === 200), {
          timeout: 60_000,
        })
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
});
