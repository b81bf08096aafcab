import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildImageDerivatives } from '../../activities/maintenance';
import { segmentsOf } from '../../core/annotation';
import { auditInvariants } from '../../db/audit';
import { getPage, listRevisions, publishPage } from '../../db/pages';
import { addApiKey, createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import {
  isolatedContexts,
  launchBrowser,
  screenshots,
  seriousViolations,
} from '../support/browser';
import { makeTempDir, removeDir } from '../support/fixtures';
import { KANT } from '../support/interchange';
import { createTestQuire, type TestQuire, temporalAddress } from '../support/quire';
import { uploadRequest } from '../support/uploadFixtures';
import { buildWeb, removeWebBuild, startWeb, type WebProcess } from '../support/webServer';

/**
 * F8 in Debian's Chromium against the real stack (`next start`, PostgreSQL, Temporal): the
 * IIIF server is a Quire itself, serving the published Kant page of one workspace (its
 * Presentation 3 manifest, its level-2 Image API and its transcript as annotations); an editor
 * of another workspace imports that manifest from the form on Upload and lands on the new item,
 * whose page has the image at the manifest's size and the lines as revision 1 (`imported`).
 * A URL that is not a manifest is refused beside the form with its code; a read-only key does
 * not get the form. Loopback is admitted by QUIRE_IIIF_ALLOW_HOSTS, as a test installation must.
 */
let quire: TestQuire;
let web: WebProcess;
let distDir: string;
let browser: Browser;
let dir: string;
const contexts = isolatedContexts(() => ({ browser, baseURL: web.url }));

beforeAll(async () => {
  dir = await makeTempDir('quire-iiif-import-e2e-');
  quire = await createTestQuire();
  const blobRoot = (quire.blobStore as unknown as { root: string }).root;
  distDir = await buildWeb();
  web = await startWeb(distDir, {
    DATABASE_URL: quire.db.url,
    TEMPORAL_ADDRESS: temporalAddress(),
    QUIRE_TASK_QUEUE: quire.config.QUIRE_TASK_QUEUE,
    QUIRE_SECRET_KEY: quire.config.QUIRE_SECRET_KEY,
    QUIRE_BLOB_DIR: blobRoot,
    QUIRE_DEFAULT_PROVIDER: 'simulated',
    QUIRE_ENABLE_SIMULATED: '1',
    QUIRE_IIIF_ALLOW_HOSTS: '127.0.0.1',
    LOG_LEVEL: 'silent',
  });
  browser = await launchBrowser();
}, 600_000);

afterEach(async () => {
  await contexts.closeAll();
  expect(await auditInvariants(quire.db.pool)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await web?.stop();
  if (distDir) removeWebBuild(distDir);
  await quire?.close();
  if (dir) await removeDir(dir);
});

async function itemCount(ws: number): Promise<number> {
  const { rows } = await quire.db.pool.query(
    'SELECT count(*)::int AS n FROM items WHERE workspace_id = $1',
    [ws],
  );
  return rows[0].n;
}

describe('importing from a IIIF manifest in the console (F8)', () => {
  it("F8 an editor imports another Quire's published item from its manifest URL: the page at the manifest's size with its lines as revision 1 imported; a URL that is not a manifest is refused beside the form", async () => {
    // The source: a published page of another workspace, the Kant scan with its PAGE XML.
    const source = await createWorkspace(quire.db.pool, 'Source archive');
    const png = join(dir, 'kant_0017.png');
    execFileSync('/usr/bin/convert', [KANT.image, png]);
    const ingested = await ingestBatch(
      { pool: quire.db.pool, blobStore: quire.blobStore, publicBaseUrl: web.url },
      source.workspace.id,
      uploadRequest([
        { name: 'itemId', value: 'berlinische-monatsschrift-1784' },
        { name: 'files[]', value: readFileSync(png), filename: 'kant_0017.png' },
        { name: 'transcript', value: readFileSync(KANT.page), filename: 'kant.page.xml' },
      ]),
    );
    const sourcePageId = ingested.pages[0]!.pageId;
    await publishPage(quire.db.pool, {
      workspaceId: source.workspace.id,
      pageId: sourcePageId,
      expectedRevision: 1,
    });
    await buildImageDerivatives({ pool: quire.db.pool, blobStore: quire.blobStore });
    const sourceLines = segmentsOf(
      (await getPage(quire.db.pool, source.workspace.id, sourcePageId))!.annotationPage,
    );
    const manifestUrl = `${web.url}/iiif/${source.workspace.id}/berlinische-monatsschrift-1784/manifest`;

    const target = await createWorkspace(quire.db.pool, 'Reading room');
    const ws = target.workspace.id;
    const context = await contexts.fresh();
    const page = await context.newPage();
    await page.goto('/signin');
    await page.getByLabel('Workspace API key').fill(target.apiKey);
    await page.getByRole('button', { name: 'Sign in with a key' }).click();
    await page.waitForURL((url) => url.pathname === '/');
    await page.goto('/upload');
    const form = page.getByTestId('iiif-import');

    // Not a manifest: the console's own sign-in page.
    await form.getByLabel('Manifest URL').fill(`${web.url}/signin`);
    await form.getByRole('button', { name: 'Import' }).click();
    const alert = form.getByRole('alert');
    await expect
      .poll(() => alert.getAttribute('data-code'), { timeout: 30_000 })
      .toBe('iiif_not_json');
    expect(await alert.textContent()).toContain('JSON');
    await screenshots(page, 'iiif-import-refused');
    expect(await itemCount(ws)).toBe(0);

    await form.getByLabel('Manifest URL').fill(manifestUrl);
    await form
      .getByLabel('Title of the imported item', { exact: false })
      .fill('Kant, Aufklärung (imported)');
    await form.getByRole('button', { name: 'Import' }).click();
    await page.waitForURL('**/items/*?done=imported', { timeout: 60_000 });
    await expect
      .poll(() => page.getByRole('heading', { level: 1 }).textContent())
      .toBe('Kant, Aufklärung (imported)');
    expect(await page.getByText('Imported from the IIIF manifest.').count()).toBe(1);
    const violations = await seriousViolations(page);
    await screenshots(page, 'iiif-import-item');
    expect(violations).toEqual([]);

    const { rows: pages } = await quire.db.pool.query(
      'SELECT id, width, height FROM pages WHERE workspace_id = $1 ORDER BY position',
      [ws],
    );
    expect(pages.map((p) => [p.width, p.height])).toEqual([[KANT.width, KANT.height]]);
    const imported = (await getPage(quire.db.pool, ws, pages[0].id))!;
    expect(imported.revision).toBe(1);
    const lines = segmentsOf(imported.annotationPage);
    expect(lines.map((s) => s.text)).toEqual(sourceLines.map((s) => s.text));
    expect(lines.map((s) => s.target)).toEqual(sourceLines.map((s) => s.target));
    expect(lines.every((s) => s.stamp?.state === 'imported')).toBe(true);
    expect((await listRevisions(quire.db.pool, ws, pages[0].id, { limit: 1 }))![0]).toMatchObject({
      source: 'import',
      provenance: { format: 'iiif' },
    });
    const { rows: audit } = await quire.db.pool.query(
      `SELECT actor_kind FROM audit_log WHERE action = 'item.import_iiif' AND workspace_id = $1`,
      [ws],
    );
    expect(audit).toEqual([{ actor_kind: 'workspace' }]);
  });

  it('F8 a read-only key is not offered the import: the upload page answers the refusal', async () => {
    const { workspace } = await createWorkspace(quire.db.pool, 'Readers');
    const readKey = await addApiKey(quire.db.pool, workspace.id, 'reader', { scope: 'read' });
    const context = await contexts.fresh();
    const page = await context.newPage();
    await page.goto('/signin');
    await page.getByLabel('Workspace API key').fill(readKey);
    await page.getByRole('button', { name: 'Sign in with a key' }).click();
    await page.waitForURL((url) => url.pathname === '/');
    await page.goto('/upload');
    await expect.poll(() => page.locator('[data-code="forbidden"]').count()).toBe(1);
    expect(await page.getByTestId('iiif-import').count()).toBe(0);
  });
});
