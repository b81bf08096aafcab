import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../blobs';
import { parseConfig } from '../../core/config';
import { auditInvariants } from '../../db/audit';
import { listAudit } from '../../db/auditLog';
import { listRevisions, publishPage, savePageEdit } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { lineProgress, listReviewQueue } from '../../db/review';
import { authenticateApiKey, createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { configureWeb } from '../../web/lib/server';
import { call, type RouteModule } from '../support/api';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { manifestSchemaErrors } from '../support/interchange';
import { file, png, uploadRequest } from '../support/uploadFixtures';

/**
 * SPEC §20 (F1-F3) through the real route handlers and PostgreSQL: collections, items with
 * their metadata and pages in order, page moves that keep revisions and canvas URIs, search
 * with snippets naming the line, and a foreign workspace that sees none of it.
 */

const BASE = 'https://quire.test';
let db: TestDatabase;
let blobDir: string;
let A: { ws: number; key: string; keyId: number };
let B: { ws: number; key: string; keyId: number };
let deps: Parameters<typeof ingestBatch>[0];

const R: Record<string, RouteModule> = {};
const loadRoutes = async () => ({
  collections: await import('../../web/app/api/v1/workspaces/[ws]/collections/route'),
  collection: await import('../../web/app/api/v1/workspaces/[ws]/collections/[collectionId]/route'),
  items: await import('../../web/app/api/v1/workspaces/[ws]/items/route'),
  item: await import('../../web/app/api/v1/workspaces/[ws]/items/[itemId]/route'),
  itemPages: await import('../../web/app/api/v1/workspaces/[ws]/items/[itemId]/pages/route'),
  search: await import('../../web/app/api/v1/workspaces/[ws]/search/route'),
  iiifCollection: await import('../../web/app/iiif/[ws]/collection/[id]/route'),
  manifest: await import('../../web/app/iiif/[ws]/[item]/manifest/route'),
  canvas: await import('../../web/app/iiif/[ws]/[item]/canvas/[pageId]/route'),
  media: await import('../../web/app/iiif/[ws]/[item]/canvas/[pageId]/media/route'),
  collectionItemCanvas: await import('../../web/app/iiif/[ws]/collection/canvas/[pageId]/route'),
});
type RouteName = keyof Awaited<ReturnType<typeof loadRoutes>>;

const as = (who: { key: string }) => ({ key: who.key });
const ws = (who: { ws: number }) => String(who.ws);

async function upload(who: { ws: number }, itemId: string, files: number) {
  const parts = [{ name: 'itemId', value: itemId }];
  const uploads = Array.from({ length: files }, (_, i) => file(png(40 + i, 30 + i), `p${i}.png`));
  const batch = await ingestBatch(deps, who.ws, uploadRequest([...parts, ...uploads]));
  return batch.pages;
}

async function writeLines(who: { ws: number }, pageId: number, lines: string[], revision = 0) {
  await withTransaction(db.pool, (tx) =>
    savePageEdit(tx, {
      workspaceId: who.ws,
      pageId,
      expectedRevision: revision,
      segments: lines.map((text, index) => ({
        index,
        target: { kind: 'xywh' as const, box: { x: 2, y: 2 + index * 10, w: 30, h: 8 } },
        text,
      })),
      author: { kind: 'apiKey', id: 1 },
      channel: 'api',
    }),
  );
}

/** A IIIF route called as Next calls it, at its real path. */
async function iiif(
  route: RouteName,
  path: string,
  params: Record<string, string>,
  headers: Record<string, string> = {},
) {
  const module = R[route] as Record<string, (r: Request, c: unknown) => Promise<Response>>;
  return module.GET!(new Request(`${BASE}${path}`, { headers }), {
    params: Promise.resolve(params),
  });
}
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

beforeAll(async () => {
  db = await createTestDatabase();
  blobDir = await mkdtemp(join(tmpdir(), 'quire-archive-'));
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'archive-test-secret-key-0123456789abcdef',
      QUIRE_PUBLIC_URL: BASE,
      QUIRE_BLOB_DIR: blobDir,
    }),
  );
  const a = await createWorkspace(db.pool, 'Archive A');
  const b = await createWorkspace(db.pool, 'Archive B');
  const keyOf = async (key: string) => (await authenticateApiKey(db.pool, key))!.actor.id;
  A = { ws: a.workspace.id, key: a.apiKey, keyId: await keyOf(a.apiKey) };
  B = { ws: b.workspace.id, key: b.apiKey, keyId: await keyOf(b.apiKey) };
  deps = { pool: db.pool, blobStore: createLocalBlobStore(blobDir), publicBaseUrl: BASE };
  Object.assign(R, await loadRoutes());
});

afterEach(async () => {
  expect(await auditInvariants(db.pool)).toEqual([]);
});

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await db?.drop();
  await rm(blobDir, { recursive: true, force: true });
});

async function createCollection(who: typeof A, body: Record<string, unknown>) {
  const created = await call(R.collections!, 'POST', '/x', { ws: ws(who) }, { ...as(who), body });
  expect(created.status, created.text).toBe(201);
  return created.json as { id: number; parentId: number | null; title: string };
}

describe('F1 collections', () => {
  it('F1 collections nest, rename and move; a move under its own descendant is 409 collection_cycle and changes nothing; each change is audited with the key', async () => {
    const fonds = await createCollection(A, {
      title: 'Fonds Harrow',
      description: 'Family papers',
      metadata: [{ label: 'Creator', value: 'Harrow family' }],
    });
    const series = await createCollection(A, { title: 'Series 1', parentId: fonds.id });
    const box = await createCollection(A, { title: 'Box 3', parentId: series.id });
    expect(box.parentId).toBe(series.id);

    const renamed = await call(
      R.collection!,
      'PATCH',
      '/x',
      { ws: ws(A), collectionId: String(series.id) },
      { ...as(A), body: { title: 'Series I: letters' } },
    );
    expect(renamed.status).toBe(200);
    expect(renamed.json.title).toBe('Series I: letters');

    const cycle = await call(
      R.collection!,
      'PATCH',
      '/x',
      { ws: ws(A), collectionId: String(fonds.id) },
      { ...as(A), body: { parentId: box.id, title: 'changed' } },
    );
    expect(cycle.status).toBe(409);
    expect(cycle.json.error.code).toBe('collection_cycle');
    const self = await call(
      R.collection!,
      'PATCH',
      '/x',
      { ws: ws(A), collectionId: String(fonds.id) },
      { ...as(A), body: { parentId: fonds.id } },
    );
    expect(self.status).toBe(409);
    const fondsNow = await call(
      R.collection!,
      'GET',
      '/x',
      {
        ws: ws(A),
        collectionId: String(fonds.id),
      },
      as(A),
    );
    expect(fondsNow.json).toMatchObject({ title: 'Fonds Harrow', parentId: null, collections: 1 });

    // The box moves up to the root, then back under the series; the path names its ancestors.
    const toRoot = await call(
      R.collection!,
      'PATCH',
      '/x',
      { ws: ws(A), collectionId: String(box.id) },
      { ...as(A), body: { parentId: null } },
    );
    expect(toRoot.json.parentId).toBeNull();
    await call(
      R.collection!,
      'PATCH',
      '/x',
      { ws: ws(A), collectionId: String(box.id) },
      { ...as(A), body: { parentId: series.id } },
    );
    const boxNow = await call(
      R.collection!,
      'GET',
      '/x',
      {
        ws: ws(A),
        collectionId: String(box.id),
      },
      as(A),
    );
    expect(boxNow.json.path.map((p: { title: string }) => p.title)).toEqual([
      'Fonds Harrow',
      'Series I: letters',
    ]);
    const roots = await call(R.collections!, 'GET', '/x', { ws: ws(A) }, as(A));
    expect(roots.json.collections.map((c: { id: number }) => c.id)).toContain(fonds.id);
    expect(roots.json.collections.map((c: { id: number }) => c.id)).not.toContain(box.id);

    const audit = await listAudit(db.pool, { workspaceId: A.ws, limit: 200 });
    const mine = audit.entries.filter((e) => e.target === `collections/${box.id}`);
    expect(mine.map((e) => e.action).sort()).toEqual([
      'collection.create',
      'collection.update',
      'collection.update',
    ]);
    expect(mine.every((e) => e.actor.kind === 'workspace' && e.actor.keyId === A.keyId)).toBe(true);
    // The refused cycle wrote nothing.
    expect(
      audit.entries.filter((e) => e.target === `collections/${fonds.id}`).map((e) => e.action),
    ).toEqual(['collection.create']);
  });

  it('F1 two moves at once that would close a cycle: one succeeds, the other is 409 collection_cycle', async () => {
    const x = await createCollection(A, { title: 'Race X' });
    const y = await createCollection(A, { title: 'Race Y' });
    const move = (id: number, parentId: number) =>
      call(
        R.collection!,
        'PATCH',
        '/x',
        { ws: ws(A), collectionId: String(id) },
        { ...as(A), body: { parentId } },
      );
    const answers = await Promise.all([move(x.id, y.id), move(y.id, x.id)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    const { rows } = await db.pool.query(
      'SELECT id, parent_id FROM collections WHERE id = ANY($1) ORDER BY id',
      [[x.id, y.id]],
    );
    expect(rows.filter((r) => r.parent_id !== null)).toHaveLength(1);
  });

  it('F1 only an empty collection can be deleted: a non-empty one is 409 collection_not_empty', async () => {
    const parent = await createCollection(A, { title: 'To delete' });
    const child = await createCollection(A, { title: 'Child', parentId: parent.id });
    const at = (id: number) => ({ ws: ws(A), collectionId: String(id) });
    const refused = await call(R.collection!, 'DELETE', '/x', at(parent.id), as(A));
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: 'collection_not_empty', collections: 1 });
    await upload(A, 'delete-me.item', 1);
    const patched = await call(
      R.item!,
      'PATCH',
      '/x',
      { ws: ws(A), itemId: 'delete-me.item' },
      { ...as(A), body: { collectionId: child.id } },
    );
    expect(patched.status).toBe(200);
    const withItem = await call(R.collection!, 'DELETE', '/x', at(child.id), as(A));
    expect(withItem.json.error).toMatchObject({ code: 'collection_not_empty', items: 1 });
    await call(
      R.item!,
      'PATCH',
      '/x',
      { ws: ws(A), itemId: 'delete-me.item' },
      { ...as(A), body: { collectionId: null } },
    );
    expect((await call(R.collection!, 'DELETE', '/x', at(child.id), as(A))).status).toBe(200);
    expect((await call(R.collection!, 'DELETE', '/x', at(parent.id), as(A))).status).toBe(200);
    expect((await call(R.collection!, 'GET', '/x', at(parent.id), as(A))).status).toBe(404);
  });

  it('F1 a collection is a IIIF Presentation 3 Collection of its sub-collections and item manifests; the public sees only what leads to published pages', async () => {
    const top = await createCollection(A, {
      title: 'Parish records',
      description: 'Registers',
      metadata: [{ label: 'Date', value: '1780-1800' }],
    });
    const sub = await createCollection(A, { title: 'Baptisms', parentId: top.id });
    const pages = await upload(A, 'register.1', 1);
    await call(
      R.item!,
      'PATCH',
      '/x',
      { ws: ws(A), itemId: 'register.1' },
      { ...as(A), body: { collectionId: top.id, title: 'Register 1' } },
    );
    const path = `/iiif/${A.ws}/collection/${top.id}`;
    const params = { ws: ws(A), id: String(top.id) };
    const draft = await iiif('iiifCollection', path, params, bearer(A.key));
    expect(draft.status).toBe(200);
    expect(draft.headers.get('content-type')).toContain('presentation/3/context.json');
    const collection = await draft.json();
    expect(manifestSchemaErrors(collection)).toEqual([]);
    expect(collection).toMatchObject({
      id: `${BASE}${path}`,
      type: 'Collection',
      label: { none: ['Parish records'] },
      summary: { none: ['Registers'] },
      metadata: [{ label: { none: ['Date'] }, value: { none: ['1780-1800'] } }],
    });
    expect(collection.items).toEqual([
      {
        id: `${BASE}/iiif/${A.ws}/collection/${sub.id}`,
        type: 'Collection',
        label: { none: ['Baptisms'] },
      },
      {
        id: `${BASE}/iiif/${A.ws}/register.1/manifest`,
        type: 'Manifest',
        label: { none: ['Register 1'] },
      },
    ]);
    // Nothing published: anyone, and another workspace's key, get a 404.
    expect((await iiif('iiifCollection', path, params)).status).toBe(404);
    expect((await iiif('iiifCollection', path, params, bearer(B.key))).status).toBe(404);
    await writeLines(A, pages[0]!.pageId, ['A baptism']);
    await publishPage(db.pool, {
      workspaceId: A.ws,
      pageId: pages[0]!.pageId,
      expectedRevision: 1,
    });
    const published = await (await iiif('iiifCollection', path, params)).json();
    expect(published.items.map((i: { type: string }) => i.type)).toEqual(['Manifest']);
    expect(manifestSchemaErrors(published)).toEqual([]);
    // The manifest names its collection and carries the item's title.
    const manifest = await (
      await iiif('manifest', `/iiif/${A.ws}/register.1/manifest`, {
        ws: ws(A),
        item: 'register.1',
      })
    ).json();
    expect(manifest.label).toEqual({ none: ['Register 1'] });
    expect(manifest.partOf).toEqual([{ id: `${BASE}${path}`, type: 'Collection' }]);
  });
  it("F1 an item whose id is `collection` keeps its manifest and canvases beside the collections' paths", async () => {
    const [page] = await upload(A, 'collection', 1);
    const manifest = await iiif(
      'iiifCollection',
      `/iiif/${A.ws}/collection/manifest`,
      { ws: ws(A), id: 'manifest' },
      bearer(A.key),
    );
    expect(manifest.status).toBe(200);
    expect((await manifest.json()).type).toBe('Manifest');
    const canvas = await iiif(
      'collectionItemCanvas',
      `/iiif/${A.ws}/collection/canvas/${page!.pageId}`,
      { ws: ws(A), pageId: String(page!.pageId) },
      bearer(A.key),
    );
    expect(canvas.status).toBe(200);
    expect((await canvas.json()).id).toBe(page!.canvasUri);
  });
});

describe('F2 items', () => {
  it('F2 GET /items is a keyset-paged JSON list (not the HTML 404), filtered by collection or root, with page and transcribed counts', async () => {
    const shelf = await createCollection(A, { title: 'Shelf' });
    for (const id of ['list.a', 'list.b', 'list.c']) await upload(A, id, 2);
    const [first] = await upload(A, 'list.d', 1);
    await writeLines(A, first!.pageId, ['some words']);
    for (const id of ['list.b', 'list.d']) {
      await call(
        R.item!,
        'PATCH',
        '/x',
        { ws: ws(A), itemId: id },
        { ...as(A), body: { collectionId: shelf.id } },
      );
    }
    const listed = await call(
      R.items!,
      'GET',
      `/x?collection=${shelf.id}&pageSize=1`,
      { ws: ws(A) },
      as(A),
    );
    expect(listed.status).toBe(200);
    expect(listed.headers.get('content-type')).toContain('application/json');
    expect(listed.json.items.map((i: { id: string }) => i.id)).toEqual(['list.b']);
    expect(listed.json.items[0]).toMatchObject({ pages: 2, transcribedPages: 0 });
    const next = await call(
      R.items!,
      'GET',
      `/x?collection=${shelf.id}&pageSize=1&pageToken=${listed.json.nextPageToken}`,
      { ws: ws(A) },
      as(A),
    );
    expect(next.json.items.map((i: { id: string }) => i.id)).toEqual(['list.d']);
    expect(next.json.items[0]).toMatchObject({ pages: 1, transcribedPages: 1 });
    expect(next.json.nextPageToken).toBeNull();
    // A token of one filter does not page another (L1).
    const misused = await call(
      R.items!,
      'GET',
      `/x?collection=root&pageSize=1&pageToken=${listed.json.nextPageToken}`,
      { ws: ws(A) },
      as(A),
    );
    expect(misused.status).toBe(400);
    const root = await call(
      R.items!,
      'GET',
      '/x?collection=root&pageSize=100',
      { ws: ws(A) },
      as(A),
    );
    const rootIds = root.json.items.map((i: { id: string }) => i.id);
    expect(rootIds).toEqual(expect.arrayContaining(['list.a', 'list.c']));
    expect(rootIds).not.toContain('list.b');
  });

  it('F2 an item takes a title, label/value metadata and a language; the manifest carries them; a bad value is 400 and changes nothing', async () => {
    await upload(A, 'described', 1);
    const at = { ws: ws(A), itemId: 'described' };
    const patched = await call(R.item!, 'PATCH', '/x', at, {
      ...as(A),
      body: {
        title: 'Letter to the parish',
        metadata: [
          { label: 'Creator', value: 'J. Harrow' },
          { label: 'Date', value: '1784-05-02' },
        ],
        language: 'en',
      },
    });
    expect(patched.status, patched.text).toBe(200);
    const bad = await call(R.item!, 'PATCH', '/x', at, {
      ...as(A),
      body: { title: 'x', metadata: [{ label: '', value: 'nothing' }] },
    });
    expect(bad.status).toBe(400);
    const item = await call(R.item!, 'GET', '/x', at, as(A));
    expect(item.json).toMatchObject({
      id: 'described',
      title: 'Letter to the parish',
      language: 'en',
      metadata: [
        { label: 'Creator', value: 'J. Harrow' },
        { label: 'Date', value: '1784-05-02' },
      ],
    });
    expect(item.json.pageList).toHaveLength(1);
    expect(item.json.pageList[0].thumbnail).toBe(`${item.json.pageList[0].canvasUri}/media`);
    const manifest = await (
      await iiif(
        'manifest',
        `/iiif/${A.ws}/described/manifest`,
        { ws: ws(A), item: 'described' },
        bearer(A.key),
      )
    ).json();
    expect(manifestSchemaErrors(manifest)).toEqual([]);
    expect(manifest.label).toEqual({ none: ['Letter to the parish'] });
    expect(manifest.metadata).toEqual([
      { label: { none: ['Creator'] }, value: { none: ['J. Harrow'] } },
      { label: { none: ['Date'] }, value: { none: ['1784-05-02'] } },
    ]);
    const audit = await listAudit(db.pool, { workspaceId: A.ws, limit: 200 });
    const entry = audit.entries.find((e) => e.target === 'items/described');
    expect(entry).toMatchObject({
      action: 'item.update',
      actor: { kind: 'workspace', keyId: A.keyId },
    });
  });

  it('F2 reordering pages and moving a page between items is one audited transaction: revisions, canvas URIs and the invariants hold, and the old canvas URI answers with the page', async () => {
    const left = await upload(A, 'split.left', 3);
    const right = await upload(A, 'split.right', 1);
    const moving = left[2]!;
    await writeLines(A, moving.pageId, ['moved line one', 'moved line two']);
    await writeLines(A, moving.pageId, ['moved line one', 'moved line 2'], 1);
    // Reorder: the left item's pages reversed.
    const reorder = await call(
      R.itemPages!,
      'PUT',
      '/x',
      { ws: ws(A), itemId: 'split.left' },
      { ...as(A), body: { pageIds: left.map((p) => p.pageId).reverse() } },
    );
    expect(reorder.status, reorder.text).toBe(200);
    expect(reorder.json.pageList.map((p: { pageId: number }) => p.pageId)).toEqual(
      left.map((p) => p.pageId).reverse(),
    );
    expect(reorder.json.pageList.map((p: { position: number }) => p.position)).toEqual([0, 1, 2]);
    // Leaving a page out is refused and changes nothing.
    const partial = await call(
      R.itemPages!,
      'PUT',
      '/x',
      { ws: ws(A), itemId: 'split.left' },
      { ...as(A), body: { pageIds: [left[0]!.pageId] } },
    );
    expect(partial.status).toBe(422);
    expect(partial.json.error.code).toBe('pages_missing');
    // Move the transcribed page to the right item, first in its order.
    const move = await call(
      R.itemPages!,
      'PUT',
      '/x',
      { ws: ws(A), itemId: 'split.right' },
      { ...as(A), body: { pageIds: [moving.pageId, right[0]!.pageId] } },
    );
    expect(move.status, move.text).toBe(200);
    expect(move.json.moved).toEqual([{ pageId: moving.pageId, fromItemId: 'split.left' }]);
    expect(move.json.pageList.map((p: { pageId: number }) => p.pageId)).toEqual([
      moving.pageId,
      right[0]!.pageId,
    ]);
    expect(move.json.pageList[0].canvasUri).toBe(moving.canvasUri);
    const leftNow = await call(R.item!, 'GET', '/x', { ws: ws(A), itemId: 'split.left' }, as(A));
    expect(
      leftNow.json.pageList.map((p: { pageId: number; position: number }) => [
        p.pageId,
        p.position,
      ]),
    ).toEqual([
      [left[1]!.pageId, 0],
      [left[0]!.pageId, 1],
    ]);
    // Every revision is still there, unchanged in number.
    const revisions = await listRevisions(db.pool, A.ws, moving.pageId, { limit: 10 });
    expect(revisions!.map((r) => r.revision)).toEqual([2, 1, 0]);
    expect(await auditInvariants(db.pool)).toEqual([]);

    // The canvas keeps its URI (under the item it was uploaded to) and is served there, now
    // part of the new item's manifest.
    const oldPath = new URL(moving.canvasUri).pathname;
    expect(oldPath).toBe(`/iiif/${A.ws}/split.left/canvas/${moving.pageId}`);
    const canvas = await iiif(
      'canvas',
      oldPath,
      { ws: ws(A), item: 'split.left', pageId: String(moving.pageId) },
      bearer(A.key),
    );
    expect(canvas.status).toBe(200);
    const body = await canvas.json();
    expect(body.id).toBe(moving.canvasUri);
    expect(body.partOf).toEqual([
      { id: `${BASE}/iiif/${A.ws}/split.right/manifest`, type: 'Manifest' },
    ]);
    expect(body.annotations[0].items.map((a: { body: { value: string } }) => a.body.value)).toEqual(
      ['moved line one', 'moved line 2'],
    );
    const media = await iiif(
      'media',
      `${oldPath}/media`,
      { ws: ws(A), item: 'split.left', pageId: String(moving.pageId) },
      bearer(A.key),
    );
    expect(media.status).toBe(200);
    expect(media.headers.get('content-type')).toBe('image/png');
    // A path that is not the page's canvas URI stays a 404 (I1), even under its new item.
    const elsewhere = await iiif(
      'canvas',
      `/iiif/${A.ws}/split.right/canvas/${moving.pageId}`,
      { ws: ws(A), item: 'split.right', pageId: String(moving.pageId) },
      bearer(A.key),
    );
    expect(elsewhere.status).toBe(404);
    const manifest = await (
      await iiif(
        'manifest',
        `/iiif/${A.ws}/split.right/manifest`,
        { ws: ws(A), item: 'split.right' },
        bearer(A.key),
      )
    ).json();
    expect(manifest.items.map((c: { id: string }) => c.id)).toEqual([
      moving.canvasUri,
      right[0]!.canvasUri,
    ]);
    expect(manifestSchemaErrors(manifest)).toEqual([]);

    const audit = await listAudit(db.pool, { workspaceId: A.ws, limit: 200 });
    const entry = audit.entries.find(
      (e) => e.action === 'item.pages' && e.target === 'items/split.right',
    );
    expect(entry?.actor).toMatchObject({ kind: 'workspace', keyId: A.keyId });
    expect(entry?.before).toMatchObject({
      'split.left': left.map((p) => p.pageId).reverse(),
      'split.right': [right[0]!.pageId],
    });
    expect(entry?.after).toMatchObject({
      'split.left': [left[1]!.pageId, left[0]!.pageId],
      'split.right': [moving.pageId, right[0]!.pageId],
    });
  });
});

describe('F3 search', () => {
  it('F3 hits carry snippets marking the matched words and naming their line; language-aware where the item has a language; filters by collection and kind', async () => {
    const pages = await upload(A, 'search.en', 1);
    const other = await upload(A, 'search.plain', 1);
    await writeLines(A, pages[0]!.pageId, [
      'The committee met on Tuesday',
      'Workers were running the <presses> all night',
      'nothing else',
    ]);
    await writeLines(A, other[0]!.pageId, ['The presses runs here']);
    await call(
      R.item!,
      'PATCH',
      '/x',
      { ws: ws(A), itemId: 'search.en' },
      { ...as(A), body: { language: 'en' } },
    );
    const found = await call(R.search!, 'GET', '/x?q=presses', { ws: ws(A) }, as(A));
    expect(found.status).toBe(200);
    const hit = found.json.hits.find((h: { pageId: number }) => h.pageId === pages[0]!.pageId);
    expect(hit.itemId).toBe('search.en');
    expect(hit.lines).toHaveLength(1);
    const [line] = hit.lines;
    expect(line.segmentIndex).toBe(1);
    expect(line.snippet.text).toBe('Workers were running the <presses> all night');
    expect(
      line.snippet.highlights.map((h: { start: number; length: number }) =>
        line.snippet.text.slice(h.start, h.start + h.length),
      ),
    ).toEqual(['presses']);
    // English stemming: "run" finds "running" in the English item, but the `simple` item
    // holds "runs", which only matches word for word.
    const stemmed = await call(R.search!, 'GET', '/x?q=run', { ws: ws(A) }, as(A));
    expect(stemmed.json.hits.map((h: { pageId: number }) => h.pageId)).toEqual([pages[0]!.pageId]);
    const marked = stemmed.json.hits[0].lines[0];
    expect(marked.segmentIndex).toBe(1);
    expect(
      marked.snippet.highlights.map((h: { start: number; length: number }) =>
        marked.snippet.text.slice(h.start, h.start + h.length),
      ),
    ).toEqual(['running']);
    // Filters: a collection (with what is below it) and a kind.
    const box = await createCollection(A, { title: 'Search box' });
    const inner = await createCollection(A, { title: 'Inner', parentId: box.id });
    await call(
      R.item!,
      'PATCH',
      '/x',
      { ws: ws(A), itemId: 'search.plain' },
      { ...as(A), body: { collectionId: inner.id } },
    );
    const scoped = await call(
      R.search!,
      'GET',
      `/x?q=presses&collectionId=${box.id}`,
      { ws: ws(A) },
      as(A),
    );
    expect(scoped.json.hits.map((h: { pageId: number }) => h.pageId)).toEqual([other[0]!.pageId]);
    const audio = await call(R.search!, 'GET', '/x?q=presses&kind=audio', { ws: ws(A) }, as(A));
    expect(audio.json.hits).toEqual([]);
  });

  it('F3 V1 the line-state filter finds only pages where a line in that state holds the words, and shows only those lines', async () => {
    const pages = await upload(A, 'search.states', 2);
    await writeLines(A, pages[0]!.pageId, ['a checked ledger entry', 'an unchecked ledger entry']);
    await writeLines(A, pages[1]!.pageId, ['another ledger, never checked']);
    const { editPage } = await import('../../web/services/pages');
    const principal = (await authenticateApiKey(db.pool, A.key))!;
    const verified = await editPage(principal, {
      pageId: pages[0]!.pageId,
      expectedRevision: 1,
      edit: { verify: [0] },
      channel: 'api',
    });
    expect(verified.state).toBe('committed');
    const scope = (state?: string) =>
      call(
        R.search!,
        'GET',
        `/x?q=ledger${state ? `&lineState=${state}` : ''}`,
        { ws: ws(A) },
        as(A),
      );
    const pagesOf = (body: { hits: Array<{ pageId: number }> }) =>
      body.hits.map((h) => h.pageId).sort((x, y) => x - y);
    const every = await scope();
    expect(pagesOf(every.json)).toEqual(
      expect.arrayContaining([pages[0]!.pageId, pages[1]!.pageId]),
    );
    const onlyVerified = await scope('verified');
    expect(onlyVerified.status).toBe(200);
    expect(pagesOf(onlyVerified.json)).toEqual([pages[0]!.pageId]);
    expect(
      onlyVerified.json.hits[0].lines.map((l: { segmentIndex: number }) => l.segmentIndex),
    ).toEqual([0]);
    const machine = await scope('machine');
    expect(pagesOf(machine.json)).toEqual(
      expect.arrayContaining([pages[0]!.pageId, pages[1]!.pageId]),
    );
    const first = machine.json.hits.find((h: { pageId: number }) => h.pageId === pages[0]!.pageId);
    expect(first.lines.map((l: { segmentIndex: number }) => l.segmentIndex)).toEqual([1]);
    const refused = await scope('checked');
    expect(refused.status).toBe(400);
  });

  it('F6 a moved page counts under its new item at once: the progress and the review queue of both items follow it', async () => {
    const from = await upload(A, 'follow.from', 2);
    const to = await upload(A, 'follow.to', 1);
    const moving = from[1]!;
    await writeLines(A, moving.pageId, ['a line to review', 'another line']);
    const linesOf = async (itemId: string) =>
      (await lineProgress(db.pool, A.ws, itemId)).lines.total;
    const queued = async (itemId: string) =>
      (await listReviewQueue(db.pool, A.ws, { itemId, limit: 50 })).map((l) => l.pageId);
    expect(await linesOf('follow.from')).toBe(2);
    const move = await call(
      R.itemPages!,
      'PUT',
      '/x',
      { ws: ws(A), itemId: 'follow.to' },
      { ...as(A), body: { pageIds: [to[0]!.pageId, moving.pageId] } },
    );
    expect(move.status, move.text).toBe(200);
    expect(await linesOf('follow.to')).toBe(2);
    expect(await linesOf('follow.from')).toBe(0);
    expect(await queued('follow.to')).toEqual([moving.pageId, moving.pageId]);
    expect(await queued('follow.from')).toEqual([]);
    expect((await lineProgress(db.pool, A.ws, 'follow.to')).pages.total).toBe(2);
  });

  it("F1 F2 F3 tenancy: another workspace's collection, item and search give 404 or no hits", async () => {
    const secret = await createCollection(A, { title: 'Private fonds' });
    const pages = await upload(A, 'tenancy.private', 1);
    await writeLines(A, pages[0]!.pageId, ['zanzibar quartermaster']);
    const asB = as(B);
    const wsB = ws(B);
    expect(
      (await call(R.collection!, 'GET', '/x', { ws: wsB, collectionId: String(secret.id) }, asB))
        .status,
    ).toBe(404);
    expect(
      (
        await call(
          R.collection!,
          'PATCH',
          '/x',
          { ws: wsB, collectionId: String(secret.id) },
          {
            ...asB,
            body: { title: 'taken' },
          },
        )
      ).status,
    ).toBe(404);
    expect(
      (await call(R.collection!, 'DELETE', '/x', { ws: wsB, collectionId: String(secret.id) }, asB))
        .status,
    ).toBe(404);
    expect(
      (await call(R.item!, 'GET', '/x', { ws: wsB, itemId: 'tenancy.private' }, asB)).status,
    ).toBe(404);
    expect(
      (
        await call(
          R.item!,
          'PATCH',
          '/x',
          { ws: wsB, itemId: 'tenancy.private' },
          {
            ...asB,
            body: { title: 'taken' },
          },
        )
      ).status,
    ).toBe(404);
    // B's own item cannot be put in A's collection, nor take A's page.
    await upload(B, 'b.item', 1);
    const foreignCollection = await call(
      R.item!,
      'PATCH',
      '/x',
      { ws: wsB, itemId: 'b.item' },
      {
        ...asB,
        body: { collectionId: secret.id },
      },
    );
    expect(foreignCollection.status).toBe(422);
    const stolen = await call(
      R.itemPages!,
      'PUT',
      '/x',
      { ws: wsB, itemId: 'b.item' },
      {
        ...asB,
        body: { pageIds: [pages[0]!.pageId] },
      },
    );
    expect(stolen.status).toBe(404);
    const bItems = await call(R.items!, 'GET', '/x', { ws: wsB }, asB);
    expect(bItems.json.items.map((i: { id: string }) => i.id)).toEqual(['b.item']);
    expect(
      (await call(R.items!, 'GET', `/x?collection=${secret.id}`, { ws: wsB }, asB)).status,
    ).toBe(404);
    const search = await call(R.search!, 'GET', '/x?q=zanzibar', { ws: wsB }, asB);
    expect(search.json.hits).toEqual([]);
    const scoped = await call(
      R.search!,
      'GET',
      `/x?q=zanzibar&collectionId=${secret.id}`,
      { ws: wsB },
      asB,
    );
    expect(scoped.status).toBe(404);
    // A's key on B's workspace path is refused outright.
    expect((await call(R.items!, 'GET', '/x', { ws: wsB }, as(A))).status).toBe(404);
    const own = await call(R.search!, 'GET', '/x?q=zanzibar', { ws: ws(A) }, as(A));
    expect(own.json.hits.map((h: { pageId: number }) => h.pageId)).toEqual([pages[0]!.pageId]);
  });
});
