import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildImageDerivatives } from '../../activities/maintenance';
import { segmentsOf } from '../../core/annotation';
import { getPage, listRevisions, publishPage } from '../../db/pages';
import { addApiKey, createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { screenshots, seriousViolations } from '../support/browser';
import { consoleStack } from '../support/consoleStack';
import { makeTempDir, removeDir } from '../support/fixtures';
import { KANT } from '../support/interchange';
import { uploadRequest } from '../support/uploadFixtures';

/**
 * F8 in Debian's Chromium against the real stack (`next start`, PostgreSQL, Temporal): the
 * IIIF server is a Quire itself, serving the published Kant page of one workspace (its
 * Presentation 3 manifest, its level-2 Image API and its transcript as annotations); an editor
 * of another workspace imports that manifest from the form on Upload and lands on the new item,
 * whose page has the image at the manifest's size and the lines as revision 1 (`imported`).
 * A URL that is not a manifest is refused beside the form with its code; a read-only key does
 * not get the form. Loopback is admitted by QUIRE_IIIF_ALLOW_HOSTS, as a test installation must.
 */
let dir: string;

// Registered before the stack: made before it, removed after it.
beforeAll(async () => {
  dir = await makeTempDir('quire-iiif-import-e2e-');
});

afterAll(async () => {
  if (dir) await removeDir(dir);
});

const stack = consoleStack({
  quire: {},
  web: () => ({
    QUIRE_DEFAULT_PROVIDER: 'simulated',
    QUIRE_ENABLE_SIMULATED: '1',
    QUIRE_IIIF_ALLOW_HOSTS: '127.0.0.1',
    LOG_LEVEL: 'silent',
  }),
  auditAfterEach: true,
  timeout: 600_000,
});

async function itemCount(ws: number): Promise<number> {
  const { rows } = await stack.quire.db.pool.query(
    'SELECT count(*)::int AS n FROM items WHERE workspace_id = $1',
    [ws],
  );
  return rows[0].n;
}

describe('importing from a IIIF manifest in the console (F8)', () => {
  it("F8 an editor imports another Quire's published item from its manifest URL: the page at the manifest's size with its lines as revision 1 imported; a URL that is not a manifest is refused beside the form", async () => {
    // The source: a published page of another workspace, the Kant scan with its PAGE XML.
    const source = await createWorkspace(stack.quire.db.pool, 'Source archive');
    const png = join(dir, 'kant_0017.png');
    execFileSync('/usr/bin/convert', [KANT.image, png]);
    const ingested = await ingestBatch(
      { pool: stack.quire.db.pool, blobStore: stack.quire.blobStore, publicBaseUrl: stack.web.url },
      source.workspace.id,
      uploadRequest([
        { name: 'itemId', value: 'berlinische-monatsschrift-1784' },
        { name: 'files[]', value: readFileSync(png), filename: 'kant_0017.png' },
        { name: 'transcript', value: readFileSync(KANT.page), filename: 'kant.page.xml' },
      ]),
    );
    const sourcePageId = ingested.pages[0]!.pageId;
    await publishPage(stack.quire.db.pool, {
      workspaceId: source.workspace.id,
      pageId: sourcePageId,
      expectedRevision: 1,
    });
    await buildImageDerivatives({ pool: stack.quire.db.pool, blobStore: stack.quire.blobStore });
    const sourceLines = segmentsOf(
      (await getPage(stack.quire.db.pool, source.workspace.id, sourcePageId))!.annotationPage,
    );
    const manifestUrl = `${stack.web.url}/iiif/${source.workspace.id}/berlinische-monatsschrift-1784/manifest`;

    const target = await createWorkspace(stack.quire.db.pool, 'Reading room');
    const ws = target.workspace.id;
    const page = await stack.signedInWithKey(target.apiKey);
    await page.goto('/upload');
    const form = page.getByTestId('iiif-import');

    // Not a manifest: the console's own sign-in page.
    await form.getByLabel('Manifest URL').fill(`${stack.web.url}/signin`);
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

    const { rows: pages } = await stack.quire.db.pool.query(
      'SELECT id, width, height FROM pages WHERE workspace_id = $1 ORDER BY position',
      [ws],
    );
    expect(pages.map((p) => [p.width, p.height])).toEqual([[KANT.width, KANT.height]]);
    const imported = (await getPage(stack.quire.db.pool, ws, pages[0].id))!;
    expect(imported.revision).toBe(1);
    const lines = segmentsOf(imported.annotationPage);
    expect(lines.map((s) => s.text)).toEqual(sourceLines.map((s) => s.text));
    expect(lines.map((s) => s.target)).toEqual(sourceLines.map((s) => s.target));
    expect(lines.every((s) => s.stamp?.state === 'imported')).toBe(true);
    expect(
      (await listRevisions(stack.quire.db.pool, ws, pages[0].id, { limit: 1 }))![0],
    ).toMatchObject({
      source: 'import',
      provenance: { format: 'iiif' },
    });
    const { rows: audit } = await stack.quire.db.pool.query(
      `SELECT actor_kind FROM audit_log WHERE action = 'item.import_iiif' AND workspace_id = $1`,
      [ws],
    );
    expect(audit).toEqual([{ actor_kind: 'workspace' }]);
  });

  it('F8 a read-only key is not offered the import: the upload page answers the refusal', async () => {
    const { workspace } = await createWorkspace(stack.quire.db.pool, 'Readers');
    const readKey = await addApiKey(stack.quire.db.pool, workspace.id, 'reader', { scope: 'read' });
    const page = await stack.signedInWithKey(readKey);
    await page.goto('/upload');
    await expect.poll(() => page.locator('[data-code="forbidden"]').count()).toBe(1);
    expect(await page.getByTestId('iiif-import').count()).toBe(0);
  });
});
