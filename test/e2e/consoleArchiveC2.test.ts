import { readFile, writeFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineStateOf, segmentsOf } from '../../core/annotation';
import { getItem, listItemPages } from '../../db/items';
import { getPage } from '../../db/pages';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { createProviderRegistry } from '../../providers/registry';
import { TesseractProvider } from '../../providers/tesseract';
import { screenshots, seriousViolations } from '../support/browser';
import { consoleStack } from '../support/consoleStack';
import { makeTempDir, RENDERED_LINES, removeDir, renderPage } from '../support/fixtures';
import { ingestWithJobs } from '../support/ingest';
import { MANIFESTO } from '../support/interchange';
import { untilStatus } from '../support/quire';
import { file, png, uploadRequest } from '../support/uploadFixtures';
import { vectorPdf } from '../support/vectorPdf';

/**
 * C2 in Debian's Chromium against the real stack (`next start`, PostgreSQL, Temporal and a
 * worker running tesseract): what a person needs is in the console, not only the API. The
 * item's searchable PDF, a re-run from the page view that keeps or replaces people's lines
 * and says how many it kept, verification progress on the archive's lists, an hOCR transcript
 * from the upload's picker, a batch's pages when no job reads them, metadata rows added as
 * needed.
 */
const tesseract = new TesseractProvider();
let dir: string;

// Registered before the stack: made before it, removed after it.
beforeAll(async () => {
  dir = await makeTempDir('quire-c2-e2e-');
});

afterAll(async () => {
  if (dir) await removeDir(dir);
});

const stack = consoleStack({
  quire: {
    config: { QUIRE_DEFAULT_PROVIDER: 'tesseract', QUIRE_HEARTBEAT_TIMEOUT_MS: '30000' },
    providers: createProviderRegistry([tesseract]),
  },
  worker: 'c2-e2e-worker',
  web: () => ({ QUIRE_DEFAULT_PROVIDER: 'tesseract', LOG_LEVEL: 'silent' }),
  auditAfterEach: true,
  beforeClose: () => tesseract.close(),
});

async function axeClean(page: Page, name: string, failures: string[]) {
  await page.waitForLoadState('load');
  for (const v of await seriousViolations(page))
    failures.push(`${name}: ${v.id} (${v.impact}) ${v.help} at ${v.targets.join(', ')}`);
  await screenshots(page, `c2-${name}`);
}

/** The job the page view's re-run started, once it is done, as the job page shows it. */
async function rerunFromPageView(page: Page, pageId: number, humanLines: 'keep' | 'replace') {
  await page.goto(`/pages/${pageId}`);
  const form = page.locator('form[data-act="job.rerun"]');
  await form.getByLabel(humanLines === 'keep' ? 'Keep human lines' : 'Replace them').check();
  await form.getByRole('button', { name: 'Re-run' }).click();
  await page.waitForURL(/\/jobs\/[^/]+$/);
  const jobId = new URL(page.url()).pathname.split('/').pop()!;
  return jobId;
}

describe('everything a person needs in the console (C2)', () => {
  it('C2 V3 V5 I7 the item page links its searchable PDF, verification progress shows on the archive, collection and item, and a re-run from the page view keeps or replaces the human lines and says how many it kept', async () => {
    const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Ledgers');
    const ws = workspace.id;
    const rendered = await renderPage(dir, 'ledger.png', RENDERED_LINES.slice(0, 3));
    const form = new FormData();
    form.append('itemId', 'ledger');
    form.append('files[]', new Blob([await readFile(rendered)], { type: 'image/png' }), 'p.png');
    const { result, records } = await ingestWithJobs(stack.quire, ws, form, {
      provider: 'tesseract',
    });
    for (const record of records) {
      const outcome = await stack.quire.temporal.workflow.getHandle(record.workflowId).result();
      expect(outcome.status).toBe('completed');
    }
    const pageId = result.pages[0]!.pageId;
    const read = segmentsOf((await getPage(stack.quire.db.pool, ws, pageId))!.annotationPage);
    expect(read.length).toBeGreaterThanOrEqual(2);
    // A person verifies the first line through the API.
    const verify = await fetch(`${stack.web.url}/api/v1/workspaces/${ws}/pages/${pageId}/verify`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        'if-match': '"1"',
      },
      body: JSON.stringify({ lines: [0] }),
    });
    expect(verify.status).toBe(200);
    const failures: string[] = [];
    const page = await stack.signedInWithKey(apiKey);

    // The item goes into a new collection.
    await page.getByLabel('New collection').fill('Account books');
    await page.getByRole('button', { name: 'Create collection' }).click();
    await page.waitForURL('**/collections/*');
    const collectionId = Number(new URL(page.url()).pathname.split('/').pop());
    await page.goto('/items/ledger');
    await page.getByLabel('Collection').selectOption(String(collectionId));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL('**/items/ledger?done=saved');

    // C2 V5: verified lines of all lines, on the archive, the collection and the item.
    const verified = `1 of ${read.length} lines verified`;
    await page.goto('/');
    const card = page.locator(`li[data-collection="${collectionId}"]`);
    expect(await card.textContent()).toContain(verified);
    expect(await card.locator('[data-verified]').getAttribute('data-verified')).toBe(
      `1/${read.length}`,
    );
    await axeClean(page, 'archive-verification', failures);
    await page.goto(`/collections/${collectionId}`);
    expect(await page.getByTestId('collection-verification').textContent()).toContain(verified);
    const row = page.locator('tr[data-item="ledger"]');
    expect(await row.textContent()).toContain(verified);
    expect(await row.textContent()).toContain('0 of 1 pages fully verified');
    await axeClean(page, 'collection-verification', failures);

    // C2 I7: the item page links the item's searchable PDF, served to the session.
    await page.goto('/items/ledger');
    expect(await page.locator('.page-head').textContent()).toContain(verified);
    const pdfLink = page.getByRole('link', { name: 'Searchable PDF' });
    const href = await pdfLink.getAttribute('href');
    expect(href).toBe(`/iiif/${ws}/ledger/pdf`);
    const pdf = await page.context().request.get(href!);
    expect(pdf.status()).toBe(200);
    expect(pdf.headers()['content-type']).toContain('application/pdf');
    const body = await pdf.body();
    expect(body.subarray(0, 5).toString()).toBe('%PDF-');
    // The engine's words are in the PDF as its text layer (invisible text).
    expect(body.length).toBeGreaterThan(1000);
    await axeClean(page, 'item-pdf', failures);

    // C2 V3: a re-run from the page view that keeps the verified line says so.
    const kept = await rerunFromPageView(page, pageId, 'keep');
    await untilStatus(stack.quire, ws, kept, 'completed', 240_000);
    await page.reload();
    await expect
      .poll(() => page.getByTestId('job-kept-lines').textContent())
      .toBe('1 human line kept');
    await axeClean(page, 'job-kept-lines', failures);
    await page.goto(`/pages/${pageId}`);
    expect(await page.locator('.page-head').textContent()).toContain('1 human line kept');
    expect(await page.locator('[data-kept-lines]').getAttribute('data-kept-lines')).toBe('1');
    await screenshots(page, 'c2-page-rerun-kept');
    const afterKeep = segmentsOf((await getPage(stack.quire.db.pool, ws, pageId))!.annotationPage);
    expect(lineStateOf(afterKeep.find((s) => s.index === 0)!)).toBe('verified');

    // Replacing them: the engine's reading wins, nothing is kept, and it is on the record.
    const replaced = await rerunFromPageView(page, pageId, 'replace');
    await untilStatus(stack.quire, ws, replaced, 'completed', 240_000);
    await page.reload();
    await expect
      .poll(() => page.getByTestId('job-kept-lines').textContent())
      .toBe('no human lines kept');
    const afterReplace = segmentsOf(
      (await getPage(stack.quire.db.pool, ws, pageId))!.annotationPage,
    );
    expect(afterReplace.every((s) => lineStateOf(s) === 'machine')).toBe(true);
    const { rows: audit } = await stack.quire.db.pool.query(
      `SELECT action, target FROM audit_log WHERE workspace_id = $1
          AND action IN ('job.rerun', 'job.overwrite_human_lines') ORDER BY id`,
      [ws],
    );
    expect(audit).toEqual([
      { action: 'job.rerun', target: expect.stringMatching(/^transcription-jobs\//) },
      { action: 'job.rerun', target: expect.stringMatching(/^transcription-jobs\//) },
      { action: 'job.overwrite_human_lines', target: `transcription-jobs/${replaced}` },
    ]);
    expect(failures).toEqual([]);
  });

  it('C2 I5 I6 an hOCR transcript chosen in the upload becomes the page text, and a batch whose pages came with their text (hOCR, a PDF text layer) links its items and pages instead of saying it has no jobs', async () => {
    const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Pamphlets');
    const ws = workspace.id;
    const pdfPath = `${dir}/born-digital.pdf`;
    await writeFile(
      pdfPath,
      vectorPdf([['A born-digital pamphlet'], ['Its second page, also text']]),
    );
    const page = await stack.signedInWithKey(apiKey);
    await page.goto('/upload');
    await page.locator('input[type="file"]').first().setInputFiles([MANIFESTO.image, pdfPath]);
    const picker = page.getByLabel('Transcript of manifesto-page-0015.png, PAGE XML, ALTO or hOCR');
    await picker.setInputFiles(MANIFESTO.hocr);
    // The picker takes the .hocr file: no refusal beside it, its name shown instead.
    await expect
      .poll(() => page.locator('.file-transcript').first().textContent())
      .toContain('Transcript: manifesto-page-0015.tesseract.hocr');
    expect(await page.locator('.file-transcript .error').count()).toBe(0);
    await screenshots(page, 'c2-upload-hocr');
    await page.getByRole('button', { name: 'Upload 2 files', exact: true }).click();
    await page.waitForURL('**/batches/**');
    const batchId = new URL(page.url()).pathname.split('/').pop()!;

    const { rows: stored } = await stack.quire.db.pool.query(
      `SELECT bp.page_id, p.item_id, bp.job_id FROM batch_pages bp JOIN pages p ON p.id = bp.page_id
        WHERE bp.batch_id = $1 ORDER BY bp.ordinal`,
      [batchId],
    );
    expect(stored).toHaveLength(3);
    expect(stored.every((r) => r.job_id === null)).toBe(true);
    const scan = (await getPage(stack.quire.db.pool, ws, Number(stored[0].page_id)))!;
    const lines = segmentsOf(scan.annotationPage);
    expect(scan.revision).toBe(1);
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.every((s) => lineStateOf(s) === 'imported')).toBe(true);

    // The batch links its items and pages; it does not say it has none.
    expect(await page.getByText('This batch has no jobs.').count()).toBe(0);
    const section = page.locator('section[aria-labelledby="batch-pages"]');
    for (const r of stored) {
      expect(await section.locator(`a[data-page="${r.page_id}"]`).count()).toBe(1);
      expect(
        await section.locator(`li[data-item="${r.item_id}"] a[href="/items/${r.item_id}"]`).count(),
      ).toBe(1);
    }
    const failures: string[] = [];
    await axeClean(page, 'batch-pages', failures);
    await section.locator(`a[data-page="${stored[2].page_id}"]`).click();
    await page.waitForURL(`**/pages/${stored[2].page_id}`);
    expect(await page.locator('ol.lines').textContent()).toContain('Its second page, also text');
    expect(failures).toEqual([]);
  });

  it('C2 F2 metadata rows are added as they are needed and removed, with no blank rows to save', async () => {
    const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Diaries');
    await ingestBatch(
      { pool: stack.quire.db.pool, blobStore: stack.quire.blobStore },
      workspace.id,
      uploadRequest([{ name: 'itemId', value: 'diary' }, file(png(40, 30), 'd.png')]),
    );
    const page = await stack.signedInWithKey(apiKey);
    await page.goto('/items/diary');
    const labels = page.locator('input[name="metaLabel"]');
    // One row to start, not three blank ones.
    expect(await labels.count()).toBe(1);
    await page.getByLabel('Metadata label 1').fill('Creator');
    await page.getByLabel('Metadata value 1').fill('Jenny Marx');
    await page.getByRole('button', { name: 'Add row' }).click();
    expect(await labels.count()).toBe(2);
    // The new row takes the focus, so typing goes on from the keyboard.
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label')))
      .toBe('Metadata label 2');
    await page.keyboard.type('Date');
    await page.getByLabel('Metadata value 2').fill('1850');
    await page.getByRole('button', { name: 'Add row' }).click();
    await page.getByLabel('Metadata label 3').fill('Mistake');
    await page.getByRole('button', { name: 'Remove metadata row 3' }).click();
    expect(await labels.count()).toBe(2);
    await screenshots(page, 'c2-metadata-rows');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL('**/items/diary?done=saved');
    expect((await getItem(stack.quire.db.pool, workspace.id, 'diary'))?.metadata).toEqual([
      { label: 'Creator', value: 'Jenny Marx' },
      { label: 'Date', value: '1850' },
    ]);
    // Saved rows come back as they are, and no more.
    expect(await labels.count()).toBe(2);
  });
});

describe('reordering pages by drag and drop and from the keyboard (F6)', () => {
  it('F6 pages are reordered by dragging one onto another and by Alt+arrow keys on a focused page, each move one audited transaction, and the counts follow at once', async () => {
    const { workspace, apiKey } = await createWorkspace(stack.quire.db.pool, 'Albums');
    const ws = workspace.id;
    const { pages } = await ingestBatch(
      { pool: stack.quire.db.pool, blobStore: stack.quire.blobStore },
      ws,
      uploadRequest([
        { name: 'itemId', value: 'album' },
        ...[0, 1, 2].map((i) => file(png(40 + i, 30), `p${i}.png`)),
      ]),
    );
    const [a, b, c] = pages.map((p) => p.pageId) as [number, number, number];
    const order = async () =>
      (await listItemPages(stack.quire.db.pool, ws, 'album')).map((p) => p.pageId);
    const strip = async (page: Page) =>
      (await page
        .locator('ol.page-strip > li')
        .evaluateAll((lis) => lis.map((li) => Number(li.getAttribute('data-page'))))) as number[];
    const page = await stack.signedInWithKey(apiKey);
    const cspViolations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    await page.goto('/items/album');
    const li = (id: number) => page.locator(`ol.page-strip > li[data-page="${id}"]`);
    // The console's CSP forbids inline styles: the strip writes none, dragging or not (an empty
    // attribute React leaves after its own style.display in a transition is no inline style).
    const inlineStyles = () =>
      page
        .locator('ol.page-strip [style], ol.page-strip[style]')
        .evaluateAll((els) => els.map((el) => el.getAttribute('style')).filter((v) => v !== ''));
    expect(await inlineStyles()).toEqual([]);

    // Drag and drop: the third page onto the first.
    await li(c).dragTo(li(a));
    await expect.poll(order).toEqual([c, a, b]);
    await page.waitForURL('**/items/album?done=reordered');
    await expect.poll(() => strip(page)).toEqual([c, a, b]);
    await screenshots(page, 'f6-dragged');

    // From the keyboard: the focused page moves up with Alt+ArrowUp and keeps the focus.
    await li(a).focus();
    await page.keyboard.press('Alt+ArrowUp');
    await expect.poll(order).toEqual([a, c, b]);
    await expect.poll(() => strip(page)).toEqual([a, c, b]);
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-page')))
      .toBe(String(a));
    await page.keyboard.press('Alt+End');
    await expect.poll(order).toEqual([c, b, a]);
    await expect.poll(() => strip(page)).toEqual([c, b, a]);
    await screenshots(page, 'f6-keyboard');
    expect(await inlineStyles()).toEqual([]);
    expect(cspViolations).toEqual([]);

    // One audited transaction per move.
    const { rows: audit } = await stack.quire.db.pool.query(
      `SELECT after FROM audit_log WHERE workspace_id = $1 AND action = 'item.pages' ORDER BY id`,
      [ws],
    );
    expect(audit).toHaveLength(3);
    // The counts follow: the page that went last is page 3 of 3 in the page view.
    await page.goto(`/pages/${a}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toContain('Page 3 of 3');
  });
});
