import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../blobs';
import { parseConfig } from '../../core/config';
import { publishPage, savePageEdit } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { configureWeb } from '../../web/lib/server';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { manifestSchemaErrors, pageSchemaErrors } from '../support/interchange';
import { file, png, uploadRequest, wav } from '../support/uploadFixtures';

/**
 * I1 through the real route handlers and Postgres: the manifest's shape against the
 * official IIIF Presentation 3 schema, and who may see what (published public, drafts for the
 * workspace's key, 404 for everyone else).
 */

const BASE = 'https://quire.test';
let db: TestDatabase;
let blobDir: string;
let A: { ws: number; key: string };
let B: { ws: number; key: string };
let imageItem: string;
let audioPageId: number;
let pages: { pageId: number; canvasUri: string }[];
// biome-ignore lint/suspicious/noExplicitAny: route modules are called loosely, as Next does
type Route = Record<string, (r: Request, c: any) => Promise<Response> | Response>;
let manifestRoute: Route;
let mediaRoute: Route;

const lines = [
  {
    index: 0,
    target: { kind: 'xywh' as const, box: { x: 2, y: 3, w: 30, h: 8 } },
    text: 'Erste Zeile',
  },
  {
    index: 1,
    target: { kind: 'xywh' as const, box: { x: 2, y: 14, w: 28, h: 8 } },
    text: 'zweite <Zeile>',
  },
];

async function get(
  route: Route,
  params: Record<string, string>,
  headers: Record<string, string> = {},
  method = 'GET',
) {
  const path = params.pageId
    ? `/iiif/${params.ws}/${params.item}/canvas/${params.pageId}/media`
    : `/iiif/${params.ws}/${params.item}/manifest`;
  const response = await route[method]!(new Request(`${BASE}${path}`, { method, headers }), {
    params: Promise.resolve(params),
  });
  return response;
}

const manifestOf = (item: string, headers: Record<string, string> = {}, ws = A.ws) =>
  get(manifestRoute, { ws: String(ws), item }, headers);
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

beforeAll(async () => {
  db = await createTestDatabase();
  blobDir = await mkdtemp(join(tmpdir(), 'quire-iiif-'));
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'iiif-test-secret-key-0123456789abcdef',
      QUIRE_PUBLIC_URL: BASE,
      QUIRE_BLOB_DIR: blobDir,
    }),
  );
  const a = await createWorkspace(db.pool, 'Archive A');
  const b = await createWorkspace(db.pool, 'Archive B');
  A = { ws: a.workspace.id, key: a.apiKey };
  B = { ws: b.workspace.id, key: b.apiKey };
  const deps = { pool: db.pool, blobStore: createLocalBlobStore(blobDir), publicBaseUrl: BASE };
  const images = await ingestBatch(
    deps,
    A.ws,
    uploadRequest([
      { name: 'itemId', value: 'letters.1784' },
      file(png(40, 30), 'a.png'),
      file(png(50, 60), 'b.png'),
    ]),
  );
  imageItem = 'letters.1784';
  pages = images.pages;
  // Page 1 gets two lines and is published; page 2 stays a draft with a newer edit on page 1.
  await withTransaction(db.pool, (tx) =>
    savePageEdit(tx, {
      workspaceId: A.ws,
      pageId: pages[0]!.pageId,
      expectedRevision: 0,
      segments: lines,
      language: 'de',
      author: { kind: 'apiKey', id: 1 },
      channel: 'api',
    }),
  );
  await publishPage(db.pool, { workspaceId: A.ws, pageId: pages[0]!.pageId, expectedRevision: 1 });
  await withTransaction(db.pool, (tx) =>
    savePageEdit(tx, {
      workspaceId: A.ws,
      pageId: pages[0]!.pageId,
      expectedRevision: 1,
      segments: [{ ...lines[0]!, text: 'Erste Zeile, unveröffentlicht' }],
      author: { kind: 'apiKey', id: 1 },
      channel: 'api',
    }),
  );
  const audio = await ingestBatch(
    deps,
    A.ws,
    uploadRequest([{ name: 'itemId', value: 'interview' }, file(wav(2500), 'talk.wav')]),
  );
  audioPageId = audio.pages[0]!.pageId;
  await withTransaction(db.pool, (tx) =>
    savePageEdit(tx, {
      workspaceId: A.ws,
      pageId: audio.pages[0]!.pageId,
      expectedRevision: 0,
      segments: [{ index: 0, target: { kind: 't', start: 0.5, end: 1.75 }, text: 'Guten Tag' }],
      author: { kind: 'apiKey', id: 1 },
      channel: 'api',
    }),
  );
  manifestRoute = (await import(
    '../../web/app/iiif/[ws]/[item]/manifest/route'
  )) as unknown as Route;
  mediaRoute = (await import(
    '../../web/app/iiif/[ws]/[item]/canvas/[pageId]/media/route'
  )) as unknown as Route;
});

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await db?.drop();
  await rm(blobDir, { recursive: true, force: true });
});

describe('I2 export route', () => {
  it('I2 the API exports PAGE XML (XSD-valid) and hOCR of an image page, and refuses them for a recording', async () => {
    const exportRoute = (await import(
      '../../web/app/api/v1/workspaces/[ws]/pages/[pageId]/export/route'
    )) as unknown as Route;
    const exportOf = (pageId: number, format: string) =>
      exportRoute.GET!(
        new Request(`${BASE}/api/v1/workspaces/${A.ws}/pages/${pageId}/export?format=${format}`, {
          headers: bearer(A.key),
        }),
        { params: Promise.resolve({ ws: String(A.ws), pageId: String(pageId) }) },
      );
    const pageXml = await exportOf(pages[0]!.pageId, 'page');
    expect(pageXml.status).toBe(200);
    expect(pageXml.headers.get('content-type')).toMatch(/^application\/xml/);
    const xml = await pageXml.text();
    expect(pageSchemaErrors(xml)).toEqual([]);
    expect(xml).toContain('<Unicode>Erste Zeile, unveröffentlicht</Unicode>');
    const hocr = await exportOf(pages[0]!.pageId, 'hocr');
    expect(hocr.status).toBe(200);
    expect(hocr.headers.get('content-type')).toMatch(/^application\/xhtml\+xml/);
    expect(await hocr.text()).toContain(
      'title="bbox 2 3 32 11">Erste Zeile, unveröffentlicht</span>',
    );
    expect((await exportOf(audioPageId, 'page')).status).toBe(422);
    expect((await exportOf(audioPageId, 'hocr')).status).toBe(422);
  });
});

describe('I1 IIIF manifest', () => {
  it("I1 the workspace's key sees the draft: one canvas per page with the stored canvas ids, image bodies and line annotations; schema-valid", async () => {
    const response = await manifestOf(imageItem, bearer(A.key));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/ld+json');
    expect(response.headers.get('content-type')).toContain('presentation/3/context.json');
    expect(response.headers.get('cache-control')).toContain('no-store');
    const manifest = await response.json();
    expect(manifestSchemaErrors(manifest)).toEqual([]);
    expect(manifest['@context']).toBe('http://iiif.io/api/presentation/3/context.json');
    expect(manifest.id).toBe(`${BASE}/iiif/${A.ws}/letters.1784/manifest`);
    expect(manifest.type).toBe('Manifest');
    expect(manifest.items.map((c: { id: string }) => c.id)).toEqual(pages.map((p) => p.canvasUri));
    const [first, second] = manifest.items;
    expect([first.width, first.height, second.width, second.height]).toEqual([40, 30, 50, 60]);
    const painting = first.items[0].items[0];
    expect(painting).toMatchObject({
      type: 'Annotation',
      motivation: 'painting',
      target: first.id,
      body: { id: `${first.id}/media`, type: 'Image', format: 'image/png', width: 40, height: 30 },
    });
    // The draft: the newest revision (2), one line.
    const annotations = first.annotations[0];
    expect(annotations.id).toBe(`${first.id}/annotations/r2`);
    expect(annotations.items).toEqual([
      {
        id: `${first.id}/annotations/r2/s0`,
        type: 'Annotation',
        motivation: 'supplementing',
        body: {
          type: 'TextualBody',
          value: 'Erste Zeile, unveröffentlicht',
          format: 'text/plain',
          purpose: 'transcribing',
        },
        target: `${first.id}#xywh=2,3,30,8`,
      },
    ]);
    // A page with no transcript has no annotation page.
    expect(second.annotations).toBeUndefined();
  });

  it('I1 anyone sees a published item: only published pages, each with its published snapshot; CORS open', async () => {
    const response = await manifestOf(imageItem);
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('cache-control')).toContain('public');
    const manifest = await response.json();
    expect(manifestSchemaErrors(manifest)).toEqual([]);
    expect(manifest.items.map((c: { id: string }) => c.id)).toEqual([pages[0]!.canvasUri]);
    const published = manifest.items[0].annotations[0];
    expect(published.id).toBe(`${pages[0]!.canvasUri}/annotations/r1`);
    expect(published.items.map((a: { body: { value: string } }) => a.body.value)).toEqual([
      'Erste Zeile',
      'zweite <Zeile>',
    ]);
    expect(published.items[1].body.language).toBe('de');
    expect(published.items.map((a: { target: string }) => a.target)).toEqual([
      `${pages[0]!.canvasUri}#xywh=2,3,30,8`,
      `${pages[0]!.canvasUri}#xywh=2,14,28,8`,
    ]);
    // Another workspace's key is just anyone: the published view.
    const foreign = await (await manifestOf(imageItem, bearer(B.key))).json();
    expect(foreign.items).toHaveLength(1);
    expect(foreign.items[0].annotations[0].id).toMatch(/\/r1$/);
  });

  it('I1 audio items: a canvas with duration and time-range annotations, schema-valid', async () => {
    const response = await manifestOf('interview', bearer(A.key));
    const manifest = await response.json();
    expect(manifestSchemaErrors(manifest)).toEqual([]);
    const canvas = manifest.items[0];
    expect(canvas.duration).toBe(2.5);
    expect(canvas.width).toBeUndefined();
    expect(canvas.items[0].items[0].body).toMatchObject({
      type: 'Sound',
      format: 'audio/wav',
      duration: 2.5,
    });
    expect(canvas.annotations[0].items[0].target).toBe(`${canvas.id}#t=0.5,1.75`);
  });

  it('I1 drafts are not public: 404 for anyone and for another workspace; a bad key is 401; unknown items 404', async () => {
    for (const headers of [{}, bearer(B.key)]) {
      const response = await manifestOf('interview', headers);
      expect(response.status).toBe(404);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect((await response.json()).error.code).toBe('not_found');
    }
    expect((await manifestOf(imageItem, bearer(A.key), B.ws)).status).toBe(404);
    expect((await manifestOf('no-such-item', bearer(A.key))).status).toBe(404);
    expect((await get(manifestRoute, { ws: 'x1', item: imageItem })).status).toBe(404);
    const bad = await manifestOf(imageItem, bearer('quire_sk_not_a_real_key'));
    expect(bad.status).toBe(401);
  });

  it('I1 the painting body is served under the same rules, with ranges; an unpublished page is 404 to the public', async () => {
    const params = { ws: String(A.ws), item: imageItem, pageId: String(pages[0]!.pageId) };
    const image = await get(mediaRoute, params);
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.headers.get('access-control-allow-origin')).toBe('*');
    const bytes = new Uint8Array(await image.arrayBuffer());
    expect([...bytes.subarray(1, 4)]).toEqual([0x50, 0x4e, 0x47]);
    const part = await get(mediaRoute, params, { range: 'bytes=0-7' });
    expect(part.status).toBe(206);
    expect((await part.arrayBuffer()).byteLength).toBe(8);
    const draftParams = { ...params, pageId: String(pages[1]!.pageId) };
    expect((await get(mediaRoute, draftParams)).status).toBe(404);
    expect((await get(mediaRoute, draftParams, bearer(A.key))).status).toBe(200);
    // A page of another item is not reachable through this item's path.
    const elsewhere = { ...params, item: 'interview' };
    expect((await get(mediaRoute, elsewhere, bearer(A.key))).status).toBe(404);
  });

  it('I1 a stored canvas URI answers: its canvas, part of the manifest, under the same rules', async () => {
    const canvasRoute = (await import(
      '../../web/app/iiif/[ws]/[item]/canvas/[pageId]/route'
    )) as unknown as Route;
    const canvasOf = (pageId: number, headers: Record<string, string> = {}) =>
      canvasRoute.GET!(new Request(pages[0]!.canvasUri, { headers }), {
        params: Promise.resolve({ ws: String(A.ws), item: imageItem, pageId: String(pageId) }),
      });
    const response = await canvasOf(pages[0]!.pageId);
    expect(response.status).toBe(200);
    const canvas = await response.json();
    expect(canvas).toMatchObject({
      '@context': 'http://iiif.io/api/presentation/3/context.json',
      id: pages[0]!.canvasUri,
      type: 'Canvas',
      partOf: [{ id: `${BASE}/iiif/${A.ws}/letters.1784/manifest`, type: 'Manifest' }],
    });
    expect(canvas.annotations[0].id).toMatch(/\/r1$/);
    expect((await canvasOf(pages[1]!.pageId)).status).toBe(404);
    expect((await canvasOf(pages[1]!.pageId, bearer(A.key))).status).toBe(200);
  });

  it('I1 preflight answers CORS for IIIF clients sending a key', async () => {
    const response = await manifestRoute.OPTIONS!(
      new Request(`${BASE}/x`, { method: 'OPTIONS' }),
      {},
    );
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-headers')).toContain('Authorization');
  });
});
