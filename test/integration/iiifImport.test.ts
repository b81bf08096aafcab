import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { segmentsOf } from '../../core/annotation';
import { parseConfig } from '../../core/config';
import { parseTranscript } from '../../core/interchange/transcriptImport';
import { auditInvariants } from '../../db/audit';
import { getPage, listRevisions } from '../../db/pages';
import { addApiKey, createWorkspace } from '../../db/workspaces';
import { configureWeb } from '../../web/lib/server';
import { call, type RouteModule } from '../support/api';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { REAL_FIXTURES } from '../support/fixtures';
import { FRAKTUR_LINES, type IiifServer, startIiifServer } from '../support/iiifServer';
import { KANT, MANIFESTO } from '../support/interchange';

/**
 * F8 through the HTTP API, a real PostgreSQL and a real IIIF server on loopback (admitted by
 * QUIRE_IIIF_ALLOW_HOSTS, as a test installation must): a Presentation 3 and a Presentation 2
 * manifest become items with their pages in order at the stated pixel sizes and their
 * transcriptions as revision 1 (`imported`); what is not a manifest, a loopback address not on
 * the allowlist, a private address, a response too large and too many canvases are refused with
 * their codes and create nothing.
 */
const MAX_SIDE = 2000;
const MAX_CANVASES = 20;
const MAX_DOCUMENT_BYTES = 1024 * 1024;
const FETCH_TIMEOUT_MS = 4000;

let db: TestDatabase;
let blobDir: string;
let server: IiifServer;
let A: { ws: number; key: string; readKey: string };
let imports: RouteModule;

beforeAll(async () => {
  db = await createTestDatabase();
  blobDir = await mkdtemp(join(tmpdir(), 'quire-iiif-import-'));
  server = await startIiifServer({ manyCanvases: MAX_CANVASES + 1 });
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'iiif-import-test-secret-key-0123456789abcdef',
      QUIRE_BLOB_DIR: blobDir,
      QUIRE_DEFAULT_PROVIDER: 'auto',
      QUIRE_IIIF_ALLOW_HOSTS: server.host,
      QUIRE_IIIF_IMAGE_MAX_SIDE: String(MAX_SIDE),
      QUIRE_IIIF_MAX_CANVASES: String(MAX_CANVASES),
      QUIRE_IIIF_MAX_DOCUMENT_BYTES: String(MAX_DOCUMENT_BYTES),
      QUIRE_IIIF_FETCH_TIMEOUT_MS: String(FETCH_TIMEOUT_MS),
    }),
  );
  const a = await createWorkspace(db.pool, 'Imports');
  A = {
    ws: a.workspace.id,
    key: a.apiKey,
    readKey: await addApiKey(db.pool, a.workspace.id, 'reader', { scope: 'read' }),
  };
  imports = await import('../../web/app/api/v1/workspaces/[ws]/iiif-imports/route');
});

afterEach(async () => {
  expect(await auditInvariants(db.pool)).toEqual([]);
});

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await server?.close();
  await db?.drop();
  await rm(blobDir, { recursive: true, force: true });
});

function importManifest(body: Record<string, unknown>, key = A.key) {
  return call(
    imports,
    'POST',
    `/workspaces/${A.ws}/iiif-imports`,
    { ws: String(A.ws) },
    { key, body },
  );
}

async function counts() {
  const { rows } = await db.pool.query(
    `SELECT (SELECT count(*) FROM items)::int AS items, (SELECT count(*) FROM pages)::int AS pages,
            (SELECT count(*) FROM blobs)::int AS blobs, (SELECT count(*) FROM blob_cleanups)::int AS cleanups,
            (SELECT count(*) FROM batches)::int AS batches, (SELECT count(*) FROM page_revisions)::int AS revisions,
            (SELECT count(*) FROM transcription_jobs)::int AS jobs,
            (SELECT count(*) FROM audit_log WHERE action = 'item.import_iiif')::int AS audits`,
  );
  const files = await readdir(blobDir, { recursive: true, withFileTypes: true }).catch(() => []);
  return { ...rows[0], files: files.filter((f) => f.isFile()).length };
}

async function pagesOf(itemId: string) {
  const { rows } = await db.pool.query(
    'SELECT id, position, width, height, media_type FROM pages WHERE item_id = $1 ORDER BY position',
    [itemId],
  );
  return rows;
}

const boxOf = (s: { target: { kind: string; box?: unknown } }) =>
  s.target.kind === 'xywh' ? s.target.box : null;

describe('F8 IIIF import', () => {
  it('F8 a Presentation 3 manifest from the loopback IIIF server becomes an item: canvases as pages in order at the stated sizes, label and metadata, transcriptions as revision 1 imported', async () => {
    const res = await importManifest({ manifestUrl: `${server.origin}/p3/manifest.json` });
    expect(res.status, res.text).toBe(201);
    expect(res.json.manifest).toEqual({ version: 3, canvases: 4, transcribed: 3 });
    const itemId: string = res.json.itemId;
    expect(res.json.pages.map((p: { itemId: string }) => p.itemId)).toEqual(Array(4).fill(itemId));

    const { rows: items } = await db.pool.query(
      'SELECT title, descriptive_metadata, metadata FROM items WHERE id = $1',
      [itemId],
    );
    expect(items[0].title).toBe('Printed pages, 1784-1898: a miscellany');
    expect(items[0].descriptive_metadata).toEqual([
      { label: 'Contents', value: 'Communist Manifesto; Kant, Aufklärung; Fraktur lines' },
      { label: 'Date', value: '1784-1898' },
      { label: 'Rights', value: 'Public domain' },
    ]);
    expect(items[0].metadata).toEqual({ iiifManifest: `${server.origin}/p3/manifest.json` });

    // In canvas order; the manifesto through its level-0 service at the largest listed size
    // within 2000 per side, the others as painted.
    const pages = await pagesOf(itemId);
    expect(pages.map((p) => [p.position, p.width, p.height, p.media_type])).toEqual([
      [pages[0].position, 1235, 2000, 'image/jpeg'],
      [pages[0].position + 1, KANT.width, KANT.height, 'image/tiff'],
      [
        pages[0].position + 2,
        server.sizes.bismarck.width,
        server.sizes.bismarck.height,
        'image/tiff',
      ],
      [
        pages[0].position + 3,
        server.sizes.eichendorff.width,
        server.sizes.eichendorff.height,
        'image/tiff',
      ],
    ]);
    expect(server.served).toContain('/iiif3/manifesto/full/1235,2000/0/default.jpg');
    expect(server.served).not.toContain('/iiif3/manifesto/full/max/0/default.jpg');
    // A seeAlso said to be JSON is no transcription: never fetched.
    expect(server.served).not.toContain('/text/kant.marc.json');

    // Page 1: tesseract's hOCR for the full scan, its boxes in the 1235x2000 image's pixels.
    const hocr = parseTranscript(await readFile(MANIFESTO.hocr));
    const first = (await getPage(db.pool, A.ws, pages[0].id))!;
    expect(first.revision).toBe(1);
    const lines = segmentsOf(first.annotationPage);
    expect(lines.map((s) => s.text)).toEqual(hocr.segments.map((s) => s.text));
    const sx = 1235 / 2745;
    const sy = 2000 / 4445;
    const original = boxOf(hocr.segments[0]!) as { x: number; y: number; w: number; h: number };
    expect(boxOf(lines[0]!)).toEqual({
      x: Math.round(original.x * sx),
      y: Math.round(original.y * sy),
      w: Math.round(original.w * sx),
      h: Math.round(original.h * sy),
    });
    expect(lines.every((s) => s.stamp?.state === 'imported')).toBe(true);
    const [firstRevision] = (await listRevisions(db.pool, A.ws, pages[0].id, { limit: 1 }))!;
    expect(firstRevision).toMatchObject({
      source: 'import',
      provenance: { format: 'hocr', url: `${server.origin}/text/manifesto.hocr` },
    });

    // Page 2: the ALTO seeAlso, at the image's own size.
    const alto = parseTranscript(await readFile(KANT.alto));
    const second = (await getPage(db.pool, A.ws, pages[1].id))!;
    expect(second.revision).toBe(1);
    expect(segmentsOf(second.annotationPage).map((s) => [s.text, boxOf(s)])).toEqual(
      alto.segments.map((s) => [s.text, boxOf(s)]),
    );
    expect((await listRevisions(db.pool, A.ws, pages[1].id, { limit: 1 }))![0]).toMatchObject({
      source: 'import',
      provenance: { format: 'alto' },
    });

    // Page 3: the W3C annotation page's transcription; the comment beside it is no line.
    const gt = (
      await readFile(
        join(REAL_FIXTURES, 'fraktur-lines', `${FRAKTUR_LINES.bismarck}.gt.txt`),
        'utf8',
      )
    ).trim();
    const third = (await getPage(db.pool, A.ws, pages[2].id))!;
    const thirdLines = segmentsOf(third.annotationPage);
    expect(thirdLines.map((s) => [s.text, boxOf(s), s.stamp?.state])).toEqual([
      [
        gt,
        { x: 0, y: 0, ...{ w: server.sizes.bismarck.width, h: server.sizes.bismarck.height } },
        'imported',
      ],
    ]);
    expect((await listRevisions(db.pool, A.ws, pages[2].id, { limit: 1 }))![0]).toMatchObject({
      source: 'import',
      provenance: { format: 'iiif', url: `${server.origin}/p3/annotations/bismarck.json` },
    });

    // Page 4 carries no transcription: revision 0 and a job, as an uploaded page.
    expect((await getPage(db.pool, A.ws, pages[3].id))!.revision).toBe(0);
    expect(res.json.pages.map((p: { jobId?: string }) => Boolean(p.jobId))).toEqual([
      false,
      false,
      false,
      true,
    ]);

    // Audited with the key that imported it.
    const { rows: audit } = await db.pool.query(
      `SELECT actor_kind, target, after FROM audit_log WHERE action = 'item.import_iiif'`,
    );
    expect(audit).toEqual([
      {
        actor_kind: 'workspace',
        target: `items/${itemId}`,
        after: expect.objectContaining({
          manifest: `${server.origin}/p3/manifest.json`,
          pages: 4,
          transcribed: 3,
          jobs: 1,
        }),
      },
    ]);
  });

  it('F8 a Presentation 2 manifest: level-0 and level-1 Image API 2 services at the stated size, its otherContent lines as revision 1, into a collection with the given title', async () => {
    const { rows } = await db.pool.query(
      `INSERT INTO collections (workspace_id, title) VALUES ($1, 'Imported') RETURNING id`,
      [A.ws],
    );
    const res = await importManifest({
      manifestUrl: `${server.origin}/p2/manifest.json`,
      collectionId: rows[0].id,
      title: 'Two pages from elsewhere',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.json.manifest).toEqual({ version: 2, canvases: 2, transcribed: 1 });
    const { rows: items } = await db.pool.query(
      'SELECT title, collection_id, descriptive_metadata FROM items WHERE id = $1',
      [res.json.itemId],
    );
    expect(items[0]).toEqual({
      title: 'Two pages from elsewhere',
      collection_id: rows[0].id,
      descriptive_metadata: [
        { label: 'Author', value: 'Marx, Karl' },
        { label: 'Date', value: '1888' },
      ],
    });
    const pages = await pagesOf(res.json.itemId);
    // Level 0: a size its info.json lists (`w,`); level 1: scaled by the server to `!2000,2000`.
    expect(server.served).toContain('/iiif2/manifesto/full/1235,/0/default.jpg');
    expect(server.served).toContain('/iiif2/kant/full/!2000,2000/0/default.jpg');
    expect(pages.map((p) => [p.width, p.height])).toEqual([
      [1235, 2000],
      [Math.round((KANT.width * MAX_SIDE) / KANT.height), MAX_SIDE],
    ]);
    const first = (await getPage(db.pool, A.ws, pages[0].id))!;
    expect(segmentsOf(first.annotationPage).map((s) => [s.text, boxOf(s), s.stamp?.state])).toEqual(
      [
        ['MANIFESTO', { x: 238, y: 269, w: 554, h: 61 }, 'imported'],
        ['OF THE', { x: 441, y: 354, w: 133, h: 24 }, 'imported'],
      ],
    );
    expect((await getPage(db.pool, A.ws, pages[1].id))!.revision).toBe(0);
  });

  it('F8 what is not a manifest, a loopback host off the allowlist, a private address, a response too large and too many canvases are refused with their codes and create nothing', async () => {
    const before = await counts();
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ manifestUrl: `${server.origin}/index.html` }, 415, 'iiif_not_json'],
      [{ manifestUrl: `${server.origin}/iiif3/manifesto/info.json` }, 415, 'iiif_not_manifest'],
      // The same server by another name: loopback, and not on the allowlist.
      [
        { manifestUrl: `http://localhost:${server.port}/p3/manifest.json` },
        422,
        'iiif_forbidden_target',
      ],
      [{ manifestUrl: 'http://10.20.30.40/iiif/manifest.json' }, 422, 'iiif_forbidden_target'],
      [{ manifestUrl: 'http://[::1]/manifest.json' }, 422, 'iiif_forbidden_target'],
      // A redirect is checked as the first URL was.
      [{ manifestUrl: `${server.origin}/moved.json` }, 422, 'iiif_forbidden_target'],
      [{ manifestUrl: `${server.origin}/huge.json` }, 413, 'iiif_too_large'],
      [{ manifestUrl: `${server.origin}/slow.json` }, 422, 'iiif_fetch_failed'],
      [{ manifestUrl: `${server.origin}/many/manifest.json` }, 413, 'iiif_too_many_canvases'],
      [{ manifestUrl: `${server.origin}/missing.json` }, 422, 'iiif_fetch_failed'],
      // The first canvas's image is stored before the second is found missing: it goes too.
      [{ manifestUrl: `${server.origin}/broken/manifest.json` }, 422, 'iiif_fetch_failed'],
      [{ manifestUrl: 'file:///etc/passwd' }, 422, 'iiif_invalid_url'],
    ];
    for (const [body, status, code] of cases) {
      const started = Date.now();
      const res = await importManifest(body);
      expect([res.status, res.json?.error?.code], String(body.manifestUrl)).toEqual([status, code]);
      expect(Date.now() - started).toBeLessThan(FETCH_TIMEOUT_MS + 2000);
      // The refusal never echoes the URL's path.
      expect(res.text).not.toContain('manifest.json');
    }
    expect(server.served).toContain('/images/missing.tif');
    expect(await counts()).toEqual(before);
  });

  it('F8 a read-scoped key may not import (403 forbidden), and nothing is fetched', async () => {
    const before = await counts();
    const served = server.served.length;
    const res = await importManifest(
      { manifestUrl: `${server.origin}/p3/manifest.json` },
      A.readKey,
    );
    expect([res.status, res.json?.error?.code]).toEqual([403, 'forbidden']);
    expect(server.served.length).toBe(served);
    expect(await counts()).toEqual(before);
  });
});
