import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import sharp, { type Sharp } from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../blobs';
import { CLI_ACTOR } from '../../core/actor';
import { createAccount, putMember } from '../../db/accounts';
import { createSession } from '../../db/sessions';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { ARTIFACTS } from '../support/browser';
import { consoleStack } from '../support/consoleStack';
import { KANT } from '../support/interchange';
import { file, uploadRequest } from '../support/uploadFixtures';

/**
 * F7 (SPEC §22, with I1 and I4) in Debian's Chromium against `next start`: the console's own
 * IIIF viewer page runs Mirador on a draft item (the
 * Kant 1784 page, a TIFF master, with its imported PAGE transcript, never published). A
 * signed-in editor sees the page image drawn on the viewer's canvas through the Image API and
 * the transcript lines as annotations, under the console's Content-Security-Policy with no
 * violation and no console error; an anonymous visitor is sent to sign in and gets no
 * manifest. Mirador is the project's own npm package, bundled with the console: nothing is
 * fetched from anywhere but the console.
 */
let blobDir: string;
let ws: number;
let itemId: string;
let pageId: number;
let editorCookie: string;

// Registered before the stack: removed after its database.
afterAll(async () => {
  await rm(blobDir, { recursive: true, force: true });
});

const stack = consoleStack({
  beforeWeb: () => draftItemWithEditor(),
  web: () => ({ QUIRE_BLOB_DIR: blobDir, LOG_LEVEL: 'warn' }),
  timeout: 900_000,
});

const TRANSCRIPT_LINE = 'Berliniſche Monatsſchrift.';

/** The Kant page (a TIFF master with its PAGE transcript) as a draft item, and its editor. */
async function draftItemWithEditor(): Promise<void> {
  blobDir = await mkdtemp(join(tmpdir(), 'quire-viewer-blobs-'));
  const created = await createWorkspace(stack.db.pool, 'Kant archive');
  ws = created.workspace.id;
  const result = await ingestBatch(
    { pool: stack.db.pool, blobStore: createLocalBlobStore(blobDir) },
    ws,
    uploadRequest([
      { name: 'itemId', value: 'berlinische-monatsschrift-1784' },
      file(readFileSync(KANT.image), 'kant_0017.tif'),
      { name: 'transcript', value: readFileSync(KANT.page), filename: 'PAGE_0017_PAGE.xml' },
    ]),
  );
  itemId = result.pages[0]!.itemId;
  pageId = result.pages[0]!.pageId;
  const account = await createAccount(stack.db.pool, CLI_ACTOR, {
    email: 'editor@viewer.test',
    name: 'Eda Editor',
    passwordHash: null,
  });
  await putMember(stack.db.pool, CLI_ACTOR, {
    workspaceId: ws,
    accountId: account.id,
    role: 'editor',
  });
  const session = await createSession(
    stack.db.pool,
    { accountId: account.id, workspaceId: ws },
    3600,
  );
  editorCookie = `quire_session=${session}`;
}

/**
 * A tab that records every Content-Security-Policy violation, console error, uncaught error
 * and failed response (`problems()` returns and clears them), and every URL it requested.
 */
async function tab(cookie?: string) {
  const context = await stack.newContext();
  if (cookie) {
    const [name, value] = cookie.split('=');
    await context.addCookies([{ name: name!, value: value!, url: stack.web.url }]);
  }
  const page = await context.newPage();
  const errors: string[] = [];
  const requested: Array<{ url: string; status: number; type: string | null }> = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page: ${String(e)}`));
  // Next's prefetches are aborted when the page moves on; any other failure is a problem.
  page.on('requestfailed', (r) => {
    if (r.failure()?.errorText !== 'net::ERR_ABORTED') errors.push(`failed: ${r.url()}`);
  });
  page.on('response', (r) => {
    requested.push({ url: r.url(), status: r.status(), type: r.headers()['content-type'] ?? null });
    if (r.status() >= 400) errors.push(`response: ${r.status()} ${new URL(r.url()).pathname}`);
  });
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) =>
      console.error(`CSP ${event.violatedDirective} ${event.blockedURI} ${event.sample}`),
    );
  });
  return { page, requested, problems: () => errors.splice(0) };
}

/** The viewer's canvas as OpenSeadragon drew it (PNG), once it has drawn the page. */
async function drawnCanvas(page: Page): Promise<Buffer> {
  let png = '';
  await expect
    .poll(
      async () => {
        png = await page.evaluate(() => {
          const canvas = document.querySelector(
            '.viewer-frame .openseadragon-canvas canvas',
          ) as HTMLCanvasElement | null;
          return canvas && canvas.width > 0 ? canvas.toDataURL('image/png') : '';
        });
        if (!png) return 0;
        const { data, info } = await sharp(Buffer.from(png.split(',')[1]!, 'base64'))
          .ensureAlpha()
          .raw()
          .toBuffer({ resolveWithObject: true });
        let painted = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) painted++;
        return painted / (info.width * info.height);
      },
      { timeout: 90_000, interval: 500 },
    )
    .toBeGreaterThan(0.1);
  return Buffer.from(png.split(',')[1]!, 'base64');
}

/**
 * Mean absolute grey difference (0-255) between the page as drawn (the opaque part of the
 * viewer's canvas) and `other`, both at 150 pixels wide; with the drawn part's aspect ratio.
 */
async function compareDrawn(canvasPng: Buffer, other: Buffer) {
  const { data, info } = await sharp(canvasPng)
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  let [left, top, right, bottom] = [info.width, info.height, -1, -1];
  for (let y = 0; y < info.height; y++) {
    for (let x = 0; x < info.width; x++) {
      if (data[(y * info.width + x) * 4 + 3]! < 250) continue;
      left = Math.min(left, x);
      right = Math.max(right, x);
      top = Math.min(top, y);
      bottom = Math.max(bottom, y);
    }
  }
  const region = { left, top, width: right - left + 1, height: bottom - top + 1 };
  const grey = (image: Sharp) =>
    image
      .flatten({ background: '#ffffff' })
      .greyscale()
      .resize(150, 214, { fit: 'fill' })
      .raw()
      .toBuffer();
  const [a, b] = await Promise.all([grey(sharp(canvasPng).extract(region)), grey(sharp(other))]);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i]! - b[i]!);
  return { difference: sum / a.length, aspect: region.width / region.height };
}

describe('F7 the IIIF viewer in the console', () => {
  it('F7 I1 I4 a signed-in editor opens a draft item in Mirador from its item page: the page image drawn through the Image API, the transcript as annotations, no CSP violation or console error', async () => {
    const { page, requested, problems } = await tab(editorCookie);
    const itemPath = `/items/${encodeURIComponent(itemId)}`;
    await page.goto(itemPath);
    // In-app navigation: the viewer takes the nonce of the document the browser holds.
    await page.getByRole('link', { name: 'Open in viewer' }).click();
    await page.waitForURL(`**${itemPath}/viewer`);
    const viewer = page.getByRole('region', { name: /in the IIIF viewer$/ });
    await viewer.getByText(TRANSCRIPT_LINE).first().waitFor({ timeout: 90_000 });
    await viewer.getByText('1784 .').first().waitFor();
    // The drawn page is the page: the Image API's own pixels of the whole page, once every
    // tile is drawn (the canvas fills in tile by tile), against a control (the same pixels
    // upside down) the comparison must tell apart.
    const pagePng = await fetch(
      `${stack.web.url}/iiif/${ws}/image/${pageId}/full/600,/0/default.png`,
      {
        headers: { cookie: editorCookie },
      },
    );
    expect(pagePng.status).toBe(200);
    const own = Buffer.from(await pagePng.arrayBuffer());
    let drawn: Buffer = Buffer.alloc(0);
    let same = { difference: Number.POSITIVE_INFINITY, aspect: 0 };
    await expect
      .poll(
        async () => {
          drawn = await drawnCanvas(page);
          same = await compareDrawn(drawn, own);
          return Math.abs(same.aspect - KANT.width / KANT.height) < 0.02 && same.difference < 20;
        },
        { timeout: 90_000, interval: 1_000 },
      )
      .toBe(true);
    const flipped = await compareDrawn(drawn, await sharp(own).rotate(180).png().toBuffer());
    console.log(JSON.stringify({ F7: { same, flipped } }));
    expect(flipped.difference).toBeGreaterThan(same.difference * 1.5);
    await page.screenshot({ path: join(ARTIFACTS, 'f7-mirador-console.png') });

    // Deep zoom: the painting's Image API service, same origin, with the session (a draft).
    const manifest = requested.find((r) => r.url.endsWith(`/iiif/${ws}/${itemId}/manifest`));
    expect(manifest?.status).toBe(200);
    expect(
      requested.some((r) => r.url.endsWith(`/image/${pageId}/info.json`) && r.status === 200),
    ).toBe(true);
    expect(
      requested.some(
        (r) =>
          new RegExp(`/image/${pageId}/[^/]+/[^/]+/0/default\\.jpg$`).test(r.url) &&
          r.status === 200,
      ),
    ).toBe(true);
    // Nothing from anywhere else: no CDN, no network.
    expect(requested.filter((r) => !r.url.startsWith(`${stack.web.url}/`))).toEqual([]);

    // A direct load (refresh) of the viewer page shows the same, still without a violation.
    await page.reload();
    await viewer.getByText(TRANSCRIPT_LINE).first().waitFor({ timeout: 90_000 });
    await drawnCanvas(page);
    expect(problems()).toEqual([]);
  });

  it('F7 I1 an anonymous visitor is sent to sign in and gets neither the draft manifest nor the viewer', async () => {
    const { page, problems } = await tab();
    await page.goto(`/items/${encodeURIComponent(itemId)}/viewer`);
    await page.waitForURL('**/signin**');
    expect(await page.locator('.viewer-frame').count()).toBe(0);
    const manifest = await page.request.get(`/iiif/${ws}/${itemId}/manifest`);
    expect(manifest.status()).toBe(404);
    const info = await page.request.get(`/iiif/${ws}/image/${pageId}/info.json`);
    expect(info.status()).toBe(404);
    expect(problems()).toEqual([]);
  });
});
