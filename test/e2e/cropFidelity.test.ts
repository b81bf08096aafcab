import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import sharp, { type Region } from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../blobs';
import type { Segment } from '../../core/annotation';
import { readHocr } from '../../core/interchange/hocrImport';
import { getPage } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { commitRevision } from '../../db/revisions';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { ARTIFACTS, screenshots } from '../support/browser';
import { consoleStack } from '../support/consoleStack';
import { MANIFESTO } from '../support/interchange';
import { MANIFESTO_SIZE, manifestoTiff } from '../support/tiffMasters';
import { file, uploadRequest } from '../support/uploadFixtures';

/**
 * V7 (SPEC §21) in Debian's Chromium against `next start`, under the console's own
 * Content-Security-Policy: the crop the review view shows for a line is exactly that line's
 * box of the page image, for a PNG master (the real manifesto scan), a TIFF master, a frame
 * of a multi-page TIFF and a PDF page, on a direct load, after a refresh and after in-app
 * navigation; the page view draws a TIFF page with its line boxes where the lines are. The
 * lines are tesseract's hOCR of the scan (test/fixtures/interchange), scaled to each master.
 */
const exec = promisify(execFile);
let blobDir: string;
let work: string;
let ws: number;
let apiKey: string;

// Registered before the stack: removed after its database.
afterAll(async () => {
  await rm(blobDir, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
});

const stack = consoleStack({
  beforeWeb: () => mastersOfTheScan(),
  web: () => ({
    QUIRE_SECRET_KEY: randomBytes(32).toString('hex'),
    QUIRE_BLOB_DIR: blobDir,
    TEMPORAL_ADDRESS: process.env.QUIRE_TEST_TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    LOG_LEVEL: 'warn',
  }),
  timeout: 900_000,
});

type Master = 'png' | 'tiff' | 'frame' | 'pdf';
interface Subject {
  itemId: string;
  pageId: number;
  /** The master's size in pixels. */
  size: { width: number; height: number };
  /** The line under test (a body line low on the page) and the line above it. */
  line: Segment & { target: { kind: 'xywh' } };
  above: Segment & { target: { kind: 'xywh' } };
}
const subjects = new Map<Master, Subject>();

const HOCR = readFileSync(MANIFESTO.hocr, 'utf8');

/** A body line in the lower half whose previous line lies wholly above it. */
function lineUnderTest(segments: Segment[], height: number) {
  const boxed = segments.filter(
    (s): s is Segment & { target: { kind: 'xywh' } } => s.target.kind === 'xywh',
  );
  const candidates = boxed.filter((s, i) => {
    const prev = boxed[i - 1];
    if (!prev || s.target.box.y < height * 0.5 || s.target.box.y > height * 0.85) return false;
    return prev.target.box.y + prev.target.box.h <= s.target.box.y && s.target.box.w > 200;
  });
  const line = candidates[candidates.length - 1]!;
  return { line, above: boxed[boxed.indexOf(line) - 1]! };
}

/** The hOCR's lines scaled to a master of `width` pixels, the line under test first in the queue. */
function linesFor(width: number): Segment[] {
  const scale = width / MANIFESTO_SIZE.width;
  const read = readHocr(HOCR).segments.map((s) => {
    if (s.target.kind !== 'xywh') return s;
    const { x, y, w, h } = s.target.box;
    return {
      ...s,
      target: {
        kind: 'xywh' as const,
        box: {
          x: Math.round(x * scale),
          y: Math.round(y * scale),
          w: Math.round(w * scale),
          h: Math.round(h * scale),
        },
      },
    };
  });
  const { line } = lineUnderTest(read, MANIFESTO_SIZE.height * scale);
  return read.map((s) => ({ ...s, confidence: s.index === line.index ? 0.01 : 0.9 }));
}

async function ingestMaster(master: Master, bytes: Buffer, filename: string, framePage = 0) {
  const itemId = `crop-${master}`;
  const result = await ingestBatch(
    { pool: stack.db.pool, blobStore: createLocalBlobStore(blobDir), pdfDpi: 150 },
    ws,
    uploadRequest([{ name: 'itemId', value: itemId }, file(bytes, filename)]),
  );
  const pageId = result.pages[framePage]!.pageId;
  const page = (await getPage(stack.db.pool, ws, pageId))!;
  const segments = linesFor(page.width!);
  await withTransaction(stack.db.pool, async (tx) => {
    const written = await commitRevision(tx, {
      pageId,
      expectedRevision: page.revision,
      segments,
      provenance: {
        source: 'import',
        import: {
          format: 'hocr',
          namespace: 'http://kba.cloud/hocr-spec/1.2/',
          producer: 'tesseract 5.3.0',
          sha256: createHash('sha256').update(HOCR).digest('hex'),
          filename: 'manifesto-page-0015.tesseract.hocr',
        },
      },
    });
    expect(written.state).toBe('committed');
  });
  subjects.set(master, {
    itemId,
    pageId,
    size: { width: page.width!, height: page.height! },
    ...lineUnderTest(segments, page.height!),
  });
}

/** The scan as a PNG, a TIFF, a TIFF's second frame and a PDF page, each with the hOCR's lines. */
async function mastersOfTheScan(): Promise<void> {
  blobDir = await mkdtemp(join(tmpdir(), 'quire-crop-blobs-'));
  work = await mkdtemp(join(tmpdir(), 'quire-crop-work-'));
  const created = await createWorkspace(stack.db.pool, 'Crops');
  ws = created.workspace.id;
  apiKey = created.apiKey;

  const half = await manifestoTiff(0.5);
  await writeFile(join(work, 'quarter.tif'), await manifestoTiff(0.25));
  await writeFile(join(work, 'half.tif'), half);
  // A two-frame TIFF whose second frame is the page under test, and a PDF of the half-size
  // scan at 150 dpi (rendered back at 150 dpi by ingest).
  await exec('tiffcp', [join(work, 'quarter.tif'), join(work, 'half.tif'), join(work, 'two.tif')]);
  await exec('tiff2pdf', [
    '-r',
    'o',
    '-x',
    '150',
    '-y',
    '150',
    '-o',
    join(work, 'scan.pdf'),
    join(work, 'half.tif'),
  ]);
  await ingestMaster('png', readFileSync(MANIFESTO.image), 'manifesto.png');
  await ingestMaster('tiff', half, 'manifesto.tif');
  await ingestMaster('frame', readFileSync(join(work, 'two.tif')), 'two.tif', 1);
  await ingestMaster('pdf', readFileSync(join(work, 'scan.pdf')), 'scan.pdf');
}

/**
 * A signed-in tab that records every Content-Security-Policy violation (in each document it
 * loads) and every console error; `problems()` returns and clears them.
 */
async function signedInTab(): Promise<{ page: Page; problems: () => Promise<string[]> }> {
  const context = await stack.newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page: ${String(e)}`));
  page.on('response', (r) => {
    if (r.status() >= 400) errors.push(`response: ${r.status()} ${new URL(r.url()).pathname}`);
  });
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) =>
      console.error(`CSP ${event.violatedDirective} ${event.blockedURI}`),
    );
  });
  await page.goto('/signin');
  await page.getByLabel('Workspace API key').fill(apiKey);
  await page.keyboard.press('Enter');
  await page.waitForURL((url) => !url.pathname.startsWith('/signin'));
  return { page, problems: async () => errors.splice(0) };
}

/** The Image API's pixels of `box` on the page, as the workspace's key fetches them. */
async function imageApiBox(pageId: number, box: { x: number; y: number; w: number; h: number }) {
  const response = await fetch(
    `${stack.web.url}/iiif/${ws}/image/${pageId}/${box.x},${box.y},${box.w},${box.h}/max/0/default.png`,
    { headers: { authorization: `Bearer ${apiKey}` } },
  );
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

/**
 * Mean absolute difference (0-255) of the grey levels of what the browser `shown` and of
 * `other` drawn at its width. An element at a fractional position is captured with one more
 * row of its surroundings at the bottom: only `other`'s rows are compared, and the caller
 * checks the sizes agree.
 */
async function meanDifference(shown: Buffer, other: Buffer): Promise<number> {
  const [a, b] = await Promise.all([sharp(shown).metadata(), sharp(other).metadata()]);
  const width = a.width;
  const height = Math.min(a.height, Math.max(1, Math.round((width * b.height) / b.width)));
  const grey = (image: Buffer, top: Region | null) => {
    const base = sharp(image).flatten({ background: '#ffffff' }).greyscale();
    return (top ? base.extract(top) : base.resize(width, height, { fit: 'fill' })).raw().toBuffer();
  };
  const [x, y] = await Promise.all([
    grey(shown, { left: 0, top: 0, width, height }),
    grey(other, null),
  ]);
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += Math.abs(x[i]! - y[i]!);
  return sum / x.length;
}

/** The crop the review view shows now, once its image has loaded, against the Image API's. */
async function expectCropOf(page: Page, subject: Subject, when: string) {
  const section = page.locator('section.review-line');
  await expect.poll(() => section.getAttribute('data-line')).toBe(String(subject.line.index));
  expect(await section.getAttribute('data-page')).toBe(String(subject.pageId));
  const crop = page.getByTestId('line-crop');
  await page.waitForFunction(() => {
    const img = document.querySelector('[data-testid="line-crop"]') as HTMLImageElement | null;
    return Boolean(img?.complete && img.naturalWidth > 0);
  });
  const shown = await crop.screenshot();
  const [own, above] = await Promise.all([
    imageApiBox(subject.pageId, subject.line.target.box),
    imageApiBox(subject.pageId, subject.above.target.box),
  ]);
  // Kept beside the other browser tests' screenshots, to look at side by side.
  mkdirSync(ARTIFACTS, { recursive: true });
  await writeFile(join(ARTIFACTS, `crop-${subject.itemId}-shown.png`), shown);
  await writeFile(join(ARTIFACTS, `crop-${subject.itemId}-box.png`), own);
  // The crop has the line's shape (within the row a fractional position adds)...
  const [drawn, box] = await Promise.all([sharp(shown).metadata(), sharp(own).metadata()]);
  const expectedHeight = (drawn.width * box.height) / box.width;
  expect(Math.abs(drawn.height - expectedHeight), `${when}: the crop's height`).toBeLessThan(2.5);
  // ...and its pixels: the line's box, not the line above.
  const toOwn = await meanDifference(shown, own);
  const toAbove = await meanDifference(shown, above);
  expect(toOwn, `${when}: the crop against its line's box`).toBeLessThan(6);
  expect(toAbove, `${when}: the crop against the line above`).toBeGreaterThan(3 * toOwn + 10);
}

describe('V7 crop fidelity', () => {
  for (const master of ['png', 'tiff', 'frame', 'pdf'] as const) {
    it(`V7 the review crop of a ${master} page is exactly the line's box on a direct load, a refresh and after in-app navigation, with no CSP violation or console error`, async () => {
      const subject = subjects.get(master)!;
      const { page, problems } = await signedInTab();
      const review = `/review?item=${encodeURIComponent(subject.itemId)}`;

      await page.goto(review);
      await expectCropOf(page, subject, 'direct load');
      if (master === 'png') await screenshots(page, 'crop-review');
      await page.reload();
      await expectCropOf(page, subject, 'refresh');
      // In-app: from the page view, through its link to the item's review.
      await page.goto(`/pages/${subject.pageId}`);
      await page.getByRole('link', { name: /Review this item/ }).click();
      await page.waitForURL((url) => url.pathname === '/review');
      await expectCropOf(page, subject, 'in-app navigation');
      expect(await problems()).toEqual([]);
    }, 120_000);
  }

  it('V7 the page view draws a TIFF page through the Image API at the size shown, its line box over that line, and zooms', async () => {
    const subject = subjects.get('tiff')!;
    const { page, problems } = await signedInTab();
    await page.goto(`/pages/${subject.pageId}`);
    const scan = page.locator('figure.canvas img');
    await page.waitForFunction(() => {
      const img = document.querySelector('figure.canvas img') as HTMLImageElement | null;
      return Boolean(img?.complete && img.naturalWidth > 0);
    });
    const drawn = await scan.evaluate((img: HTMLImageElement) => ({
      src: img.currentSrc,
      natural: img.naturalWidth,
      shown: img.getBoundingClientRect().width,
    }));
    expect(new URL(drawn.src).pathname).toMatch(
      new RegExp(`^/iiif/${ws}/image/${subject.pageId}/full/\\d+,/0/default\\.jpg$`),
    );
    // Not the master's full width when shown smaller: a width of the srcset near the size shown.
    expect(drawn.natural).toBeGreaterThanOrEqual(drawn.shown);
    expect(drawn.natural).toBeLessThan(subject.size.width);
    await screenshots(page, 'crop-page-tiff');

    // The line's box drawn over the page lies where the line is on the image drawn...
    await page.setViewportSize({ width: 1280, height: 1800 });
    await page.evaluate(() => window.scrollTo(0, 0));
    const image = (await scan.boundingBox())!;
    const drawnBox = (await page.locator(`rect[data-line="${subject.line.index}"]`).boundingBox())!;
    const box = subject.line.target.box;
    const k = image.width / subject.size.width;
    // Centres agree; the outline (a 3-pixel stroke, half outside) adds 3 pixels to the size.
    expect(
      Math.abs(drawnBox.x + drawnBox.width / 2 - (image.x + (box.x + box.w / 2) * k)),
    ).toBeLessThan(1);
    expect(
      Math.abs(drawnBox.y + drawnBox.height / 2 - (image.y + (box.y + box.h / 2) * k)),
    ).toBeLessThan(1);
    expect(Math.abs(drawnBox.width - 3 - box.w * k)).toBeLessThan(1);
    expect(Math.abs(drawnBox.height - 3 - box.h * k)).toBeLessThan(1);
    // ...and the pixels of the image drawn there are that line's, not the line above's.
    await page.locator('svg.boxes').evaluate((svg: SVGElement) => {
      svg.style.visibility = 'hidden';
    });
    const whole = await scan.screenshot();
    const scale = (await sharp(whole).metadata()).width / subject.size.width;
    const under = await sharp(whole)
      .extract({
        left: Math.round(box.x * scale),
        top: Math.round(box.y * scale),
        width: Math.round(box.w * scale),
        height: Math.round(box.h * scale),
      })
      .png()
      .toBuffer();
    await writeFile(join(ARTIFACTS, 'crop-page-tiff-line.png'), under);
    const [own, above] = await Promise.all([
      imageApiBox(subject.pageId, box),
      imageApiBox(subject.pageId, subject.above.target.box),
    ]);
    const toOwn = await meanDifference(under, own);
    // A line about 150 screen pixels wide: a one-pixel offset in the browser's resampling of
    // crisp print alone costs 10-20; the line above differs by far more than twice as much.
    expect(toOwn).toBeLessThan(35);
    expect(await meanDifference(under, above)).toBeGreaterThan(2 * toOwn);
    await page.locator('svg.boxes').evaluate((svg: SVGElement) => {
      svg.style.visibility = '';
    });

    // Zoom: 4x draws the page four times as wide, from a larger Image API width.
    await page.getByRole('link', { name: '4×' }).click();
    await page.waitForURL((url) => url.searchParams.get('zoom') === '4');
    await page.waitForFunction((before) => {
      const img = document.querySelector('figure.canvas img') as HTMLImageElement | null;
      return Boolean(img?.complete && img.getBoundingClientRect().width > before * 3.5);
    }, drawn.shown);
    expect(await scan.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBeGreaterThan(
      drawn.natural,
    );
    expect(await problems()).toEqual([]);
  }, 120_000);
});
