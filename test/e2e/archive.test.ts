import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { segmentsOf } from '../../core/annotation';
import { getItem, listItemPages } from '../../db/items';
import { getPage } from '../../db/pages';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { createProviderRegistry } from '../../providers/registry';
import { TesseractProvider } from '../../providers/tesseract';
import { screenshots, seriousViolations } from '../support/browser';
import { consoleStack } from '../support/consoleStack';
import {
  MANIFESTO_PAGE,
  makeTempDir,
  RENDERED_LINES,
  removeDir,
  renderPage,
} from '../support/fixtures';
import { ingestWithJobs } from '../support/ingest';
import { file, png, uploadRequest } from '../support/uploadFixtures';

/**
 * F1-F4 in Debian's Chromium against the real stack: `next start`, PostgreSQL, a Temporal dev
 * server and a worker running the real offline engine (tesseract) on the real manifesto scan.
 * An editor signs in and lands on the archive, makes a collection, moves two uploaded items
 * into it, titles one, reorders its pages, searches for a word the engine read from the scan
 * and lands on the page with that line highlighted; every archive page passes axe.
 */
const tesseract = new TesseractProvider();
let dir: string;

// Registered before the stack: made before it, removed after it.
beforeAll(async () => {
  dir = await makeTempDir('quire-archive-e2e-');
});

afterAll(async () => {
  if (dir) await removeDir(dir);
});

const stack = consoleStack({
  quire: {
    config: { QUIRE_DEFAULT_PROVIDER: 'tesseract', QUIRE_HEARTBEAT_TIMEOUT_MS: '30000' },
    providers: createProviderRegistry([tesseract]),
  },
  worker: 'archive-e2e-worker',
  web: () => ({ QUIRE_DEFAULT_PROVIDER: 'tesseract', LOG_LEVEL: 'silent' }),
  auditAfterEach: true,
  beforeClose: () => tesseract.close(),
});

/** Uploads files as one item through the ingest and waits for every page's job to finish. */
async function uploadItem(workspaceId: number, itemId: string, files: string[]) {
  const form = new FormData();
  form.append('itemId', itemId);
  for (const path of files) {
    form.append('files[]', new Blob([await readFile(path)], { type: 'image/png' }), 'page.png');
  }
  const { result, records } = await ingestWithJobs(stack.quire, workspaceId, form, {
    provider: 'tesseract',
  });
  for (const record of records) {
    const outcome = await stack.quire.temporal.workflow.getHandle(record.workflowId).result();
    expect(outcome.status).toBe('completed');
  }
  return result.pages.map((p) => p.pageId);
}

async function axeClean(page: Page, name: string, failures: string[]) {
  await page.waitForLoadState('load');
  for (const v of await seriousViolations(page))
    failures.push(`${name}: ${v.id} (${v.impact}) ${v.help} at ${v.targets.join(', ')}`);
  await screenshots(page, `archive-${name}`);
}

describe('the archive in the console (F1-F4)', () => {
  it('F1 F2 F3 F4 an editor lands on the archive, files two uploaded items in a new collection, titles one, reorders its pages, and a searched word from the real scan opens its page with the line highlighted', async () => {
    const { workspace, apiKey } = await createWorkspace(
      stack.quire.db.pool,
      'Marx and Engels papers',
    );
    const ws = workspace.id;
    const rendered = await renderPage(dir, 'cover.png', RENDERED_LINES.slice(0, 3));
    const manifestoPages = await uploadItem(ws, 'manifesto', [MANIFESTO_PAGE, rendered]);
    const [letterPage] = await uploadItem(ws, 'letter', [rendered]);
    // The word to look for is one the engine really read from the scan.
    const scanned = segmentsOf(
      (await getPage(stack.quire.db.pool, ws, manifestoPages[0]!))!.annotationPage,
    );
    const target = scanned
      .flatMap((s) => s.text.split(/[^A-Za-z]+/).map((word) => ({ word, index: s.index })))
      .find(({ word }) => word.length >= 9 && /^[a-z]+$/.test(word));
    expect(target, scanned.map((s) => s.text).join('\n')).toBeDefined();
    const failures: string[] = [];

    // F4: home is the archive: the items with their pages and progress.
    const page = await stack.signedInWithKey(apiKey);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Archive');
    expect(await page.locator('tr[data-item="manifesto"]').textContent()).toContain(
      '2 of 2 transcribed',
    );
    for (const name of ['Jobs', 'Batches', 'Operations']) {
      expect(
        await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).count(),
      ).toBe(1);
    }
    await axeClean(page, 'home', failures);

    // F1: a new collection.
    await page.getByLabel('New collection').fill('Manifesto drafts');
    await page.getByRole('button', { name: 'Create collection' }).click();
    await page.waitForURL('**/collections/*');
    const collectionId = Number(new URL(page.url()).pathname.split('/').pop());
    await expect
      .poll(() => page.getByRole('heading', { level: 1 }).textContent())
      .toBe('Manifesto drafts');

    // F2: both items move into it; the manifesto gets a title.
    await page.goto('/items/manifesto');
    await page.getByLabel('Title', { exact: true }).fill('Manifesto, page 15');
    await page.getByLabel('Collection').selectOption(String(collectionId));
    await page.getByLabel('Metadata label 1').fill('Creator');
    await page.getByLabel('Metadata value 1').fill('Karl Marx and Friedrich Engels');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL('**/items/manifesto?done=saved');
    await axeClean(page, 'item', failures);
    await page.goto('/items/letter');
    await page.getByLabel('Collection').selectOption(String(collectionId));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL('**/items/letter?done=saved');
    const manifesto = await getItem(stack.quire.db.pool, ws, 'manifesto');
    expect(manifesto).toMatchObject({
      title: 'Manifesto, page 15',
      collectionId,
      metadata: [{ label: 'Creator', value: 'Karl Marx and Friedrich Engels' }],
    });
    expect((await getItem(stack.quire.db.pool, ws, 'letter'))?.collectionId).toBe(collectionId);

    // F2: the scan moves after the cover page.
    await page.goto('/items/manifesto');
    await page.getByRole('button', { name: 'Move page 1 later' }).click();
    await page.waitForURL('**/items/manifesto?done=reordered');
    const order = (await listItemPages(stack.quire.db.pool, ws, 'manifesto')).map((p) => p.pageId);
    expect(order).toEqual([manifestoPages[1], manifestoPages[0]]);
    await expect
      .poll(() => page.locator('.page-strip li').first().getAttribute('data-page'))
      .toBe(String(manifestoPages[1]));
    // F2 I4: the strip's thumbnails come from the Image API (never the full master), and load.
    const thumbnail = page.locator(`li[data-page="${manifestoPages[0]}"] img`);
    expect(await thumbnail.getAttribute('src')).toMatch(
      new RegExp(`^/iiif/${ws}/image/${manifestoPages[0]}/full/[^/]+/0/default\\.jpg$`),
    );
    await expect
      .poll(() => thumbnail.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth))
      .toBeGreaterThan(0);

    await page.goto(`/collections/${collectionId}`);
    for (const id of ['manifesto', 'letter'])
      expect(await page.locator(`tr[data-item="${id}"]`).count()).toBe(1);
    await axeClean(page, 'collection', failures);

    // F3: search within the collection for the word read from the scan.
    await page.goto('/search');
    await page.getByLabel('Words').fill(target!.word);
    await page.getByLabel('In collection').selectOption(String(collectionId));
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL('**/search?*');
    const hit = page.locator(`li[data-hit="${manifestoPages[0]}"]`);
    await expect.poll(() => hit.count()).toBe(1);
    expect(await hit.locator('mark').first().textContent()).toBe(target!.word);
    expect(await page.locator(`li[data-hit="${letterPage}"]`).count()).toBe(0);
    await axeClean(page, 'search', failures);
    const line = hit.locator(`a[data-line="${target!.index}"]`);
    await line.click();
    await page.waitForURL(`**/pages/${manifestoPages[0]}?line=${target!.index}`);
    // The line is selected in the transcript and its box outlined on the image.
    await expect
      .poll(() => page.locator(`ol.lines li[data-line="${target!.index}"]`).getAttribute('class'))
      .toContain('line-active');
    expect(await page.locator(`rect[data-line="${target!.index}"]`).getAttribute('class')).toBe(
      'box box-active',
    );
    expect(await page.locator('rect.box-active').count()).toBe(1);
    await axeClean(page, 'page-line', failures);
    expect(failures).toEqual([]);
  });
});

describe('a batch with one bad file in the console (I9)', () => {
  it('I9 a batch with one bad file stores the others, and its page lists each file with its outcome', async () => {
    const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Mixed batch');
    // A PNG that declares 50,000 x 50,000 pixels: its bytes look right, the server refuses it.
    const bomb = join(dir, 'bomb.png');
    await writeFile(bomb, png(1, 1, { width: 50_000, height: 50_000 }));
    const page = await stack.signedInWithKey(apiKey);
    await page.goto('/upload');
    await page.locator('input[type="file"]').setInputFiles([MANIFESTO_PAGE, bomb]);
    await page.getByRole('button', { name: 'Upload 2 files', exact: true }).click();
    await page.waitForURL('**/batches/**');
    const rows = page.locator('section[aria-labelledby="batch-files"] tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.nth(0).getAttribute('data-outcome')).toBe('stored');
    expect(await rows.nth(0).textContent()).toContain('manifesto-page-0015.png');
    expect(await rows.nth(1).getAttribute('data-outcome')).toBe('refused');
    expect(await rows.nth(1).textContent()).toContain('bomb.png');
    expect(await rows.nth(1).textContent()).toContain('image_too_large');
    await screenshots(page, 'batch-one-bad-file');
    const { rows: pages } = await stack.quire.db.pool.query(
      'SELECT count(*)::int AS n FROM pages WHERE workspace_id = $1',
      [workspace.id],
    );
    expect(pages[0].n).toBe(1);
  });
});

describe('moving a page by choosing its item (F6)', () => {
  it('F6 a page is moved by finding its target item by title and choosing it; both items show it where it now is', async () => {
    const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Letters');
    const ingest = (itemId: string, files: number) =>
      ingestBatch(
        { pool: stack.quire.db.pool, blobStore: stack.quire.blobStore },
        workspace.id,
        uploadRequest([
          { name: 'itemId', value: itemId },
          ...Array.from({ length: files }, (_, i) => file(png(40 + i, 30), `p${i}.png`)),
        ]),
      );
    const from = await ingest('bundle-1', 2);
    await ingest('letter-to-engels', 1);
    await ingest('letter-to-ruge', 1);
    await stack.quire.db.pool.query(
      "UPDATE items SET title = CASE id WHEN 'letter-to-engels' THEN 'Letter to Engels, 1844' ELSE 'Letter to Ruge' END WHERE workspace_id = $1 AND id LIKE 'letter-%'",
      [workspace.id],
    );
    const page = await stack.signedInWithKey(apiKey);
    await page.goto('/items/bundle-1');
    await page.getByLabel('Move pages to an item titled').fill('engels');
    await page.getByRole('button', { name: 'Find items' }).click();
    await page.waitForURL('**/items/bundle-1?moveTo=engels');
    const chooser = page.getByLabel('Item to move page 2 to');
    // Found by title, any case; the other letter is not offered.
    expect(await chooser.locator('option').allTextContents()).toEqual([
      'Letter to Engels, 1844 (letter-to-engels)',
    ]);
    await chooser.selectOption('letter-to-engels');
    await page.getByRole('button', { name: 'Move page 2 to the chosen item' }).click();
    await page.waitForURL('**/items/bundle-1?done=moved');
    expect(await page.locator('ol.page-strip > li').count()).toBe(1);
    await screenshots(page, 'item-page-mover');
    await page.goto('/items/letter-to-engels');
    const moved = page.locator(`ol.page-strip > li[data-page="${from.pages[1]!.pageId}"]`);
    expect(await moved.count()).toBe(1);
    expect(await page.locator('ol.page-strip > li').count()).toBe(2);
  });
});
