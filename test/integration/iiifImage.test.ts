import { readFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildImageDerivatives, runBlobCleanup, sweepOrphans } from '../../activities/maintenance';
import { createLocalBlobStore } from '../../blobs';
import { makePageDerivative } from '../../blobs/derivatives';
import type { BlobStore } from '../../blobs/store';
import { parseConfig } from '../../core/config';
import { auditInvariants } from '../../db/audit';
import { workspaceUsageBytes } from '../../db/blobs';
import { pagesNeedingDerivative } from '../../db/derivatives';
import { deleteItem } from '../../db/items';
import { publishPage } from '../../db/pages';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { configureWeb } from '../../web/lib/server';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { MANIFESTO_PAGE } from '../support/fixtures';
import { manifestSchemaErrors } from '../support/interchange';
import { BLUE_PATCH, MANIFESTO_SIZE, manifestoTiff, RED_PATCH } from '../support/tiffMasters';
import { file, png, uploadRequest, wav } from '../support/uploadFixtures';

/**
 * I4 through the real route handlers, Postgres and the local blob store: the Image API's
 * info.json and its region/size/rotation/quality/format combinations (each answer decoded with
 * sharp, its pixel size and a pixel checked), its refusals, I1's access rules, and the
 * pyramidal derivative: made once by the maintenance job, counted against quota, removed with
 * its page. The TIFF master is the real manifesto scan as an LZW TIFF with two colour patches.
 */

const BASE = 'https://quire.test';
let db: TestDatabase;
let blobDir: string;
let blobStore: BlobStore;
let A: { ws: number; key: string };
let B: { ws: number; key: string };
/** A's TIFF master, published; A's PNG master (the scan as it is), a draft; A's recording. */
let tiffPage: number;
let pngPage: number;
let audioPage: number;
// biome-ignore lint/suspicious/noExplicitAny: route modules are called loosely, as Next does
type Route = Record<string, (r: Request, c: any) => Promise<Response> | Response>;
let imageRoute: Route;
let infoRoute: Route;
let baseRoute: Route;
let manifestRoute: Route;

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function image(
  pageId: number,
  path: string,
  headers: Record<string, string> = {},
  ws = A.ws,
): Promise<Response> {
  const [region, size, rotation, fileName] = path.split('/') as [string, string, string, string];
  return imageRoute.GET!(new Request(`${BASE}/iiif/${ws}/image/${pageId}/${path}`, { headers }), {
    params: Promise.resolve({
      ws: String(ws),
      pageId: String(pageId),
      region: encodeURIComponent(region),
      size: encodeURIComponent(size),
      rotation: encodeURIComponent(rotation),
      file: fileName,
    }),
  });
}

async function info(pageId: number, headers: Record<string, string> = {}, ws = A.ws) {
  return infoRoute.GET!(new Request(`${BASE}/iiif/${ws}/image/${pageId}/info.json`, { headers }), {
    params: Promise.resolve({ ws: String(ws), pageId: String(pageId) }),
  });
}

async function decoded(response: Response) {
  expect(response.status).toBe(200);
  const bytes = Buffer.from(await response.arrayBuffer());
  const meta = await sharp(bytes).metadata();
  const { data, info: raw } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  const pixel = (x: number, y: number) => {
    const at = (y * raw.width + x) * raw.channels;
    return Array.from(data.subarray(at, at + Math.min(3, raw.channels)));
  };
  return { meta, width: raw.width, height: raw.height, channels: raw.channels, pixel };
}

const isRed = (p: number[]) => p[0]! > 150 && p[1]! < 90 && p[2]! < 90;
const isBlue = (p: number[]) => p[2]! > 150 && p[0]! < 90 && p[1]! < 110;

beforeAll(async () => {
  db = await createTestDatabase();
  blobDir = await mkdtemp(join(tmpdir(), 'quire-iiif-image-'));
  blobStore = createLocalBlobStore(blobDir);
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'iiif-image-test-secret-key-0123456789abcdef',
      QUIRE_PUBLIC_URL: BASE,
      QUIRE_BLOB_DIR: blobDir,
    }),
  );
  const a = await createWorkspace(db.pool, 'Archive A');
  const b = await createWorkspace(db.pool, 'Archive B');
  A = { ws: a.workspace.id, key: a.apiKey };
  B = { ws: b.workspace.id, key: b.apiKey };
  const deps = { pool: db.pool, blobStore, publicBaseUrl: BASE };
  const tiff = await ingestBatch(
    deps,
    A.ws,
    uploadRequest([
      { name: 'itemId', value: 'manifesto-tiff' },
      file(await manifestoTiff(), 'manifesto-0015.tif'),
    ]),
  );
  tiffPage = tiff.pages[0]!.pageId;
  await publishPage(db.pool, { workspaceId: A.ws, pageId: tiffPage, expectedRevision: 0 });
  const png = await ingestBatch(
    deps,
    A.ws,
    uploadRequest([
      { name: 'itemId', value: 'manifesto-png' },
      file(readFileSync(MANIFESTO_PAGE), 'manifesto-page-0015.png'),
    ]),
  );
  pngPage = png.pages[0]!.pageId;
  const audio = await ingestBatch(
    deps,
    A.ws,
    uploadRequest([{ name: 'itemId', value: 'talk' }, file(wav(1500), 'talk.wav')]),
  );
  audioPage = audio.pages[0]!.pageId;
  imageRoute = (await import(
    '../../web/app/iiif/[ws]/image/[pageId]/[region]/[size]/[rotation]/[file]/route'
  )) as unknown as Route;
  infoRoute = (await import(
    '../../web/app/iiif/[ws]/image/[pageId]/info.json/route'
  )) as unknown as Route;
  baseRoute = (await import('../../web/app/iiif/[ws]/image/[pageId]/route')) as unknown as Route;
  manifestRoute = (await import(
    '../../web/app/iiif/[ws]/[item]/manifest/route'
  )) as unknown as Route;
}, 120_000);

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await db?.drop();
  await rm(blobDir, { recursive: true, force: true });
});

async function derivativeOf(pageId: number) {
  const { rows } = await db.pool.query(
    `SELECT p.derivative_key, b.size_bytes, b.created_at, b.deleted_at FROM pages p
       LEFT JOIN blobs b ON b.key = p.derivative_key WHERE p.id = $1`,
    [pageId],
  );
  return rows[0] as {
    derivative_key: string | null;
    size_bytes: string | null;
    created_at: Date | null;
    deleted_at: Date | null;
  };
}

describe('I4 IIIF Image API 3', () => {
  it('I4 info.json is an Image API 3 level 2 service with sizes and tiles', async () => {
    const response = await info(tiffPage, { accept: 'application/ld+json' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(
      'application/ld+json;profile="http://iiif.io/api/image/3/context.json"',
    );
    // Without asking for JSON-LD, the same document as plain JSON (Image API 3, 6.1).
    const plain = await info(tiffPage);
    expect(plain.headers.get('content-type')).toBe('application/json');
    expect(await plain.json()).toMatchObject({ type: 'ImageService3' });
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    const body = await response.json();
    expect(body).toMatchObject({
      '@context': 'http://iiif.io/api/image/3/context.json',
      id: `${BASE}/iiif/${A.ws}/image/${tiffPage}`,
      type: 'ImageService3',
      protocol: 'http://iiif.io/api/image',
      profile: 'level2',
      width: MANIFESTO_SIZE.width,
      height: MANIFESTO_SIZE.height,
      tiles: [{ width: 256, height: 256, scaleFactors: [1, 2, 4, 8, 16, 32] }],
    });
    expect(body.maxArea).toBeUndefined();
    // Smallest first, each a halving, all below full size.
    expect(body.sizes[0]).toEqual({ width: 86, height: 139 });
    expect(body.sizes.at(-1)).toEqual({ width: 1373, height: 2223 });
    expect(body.sizes).toHaveLength(5);
    // The base URI answers with a redirect to info.json.
    const redirect = await baseRoute.GET!(new Request(`${BASE}/iiif/${A.ws}/image/${tiffPage}`), {
      params: Promise.resolve({ ws: String(A.ws), pageId: String(tiffPage) }),
    });
    expect(redirect.status).toBe(303);
    expect(redirect.headers.get('location')).toBe(`${body.id}/info.json`);
  });

  it('I4 regions, sizes, rotations, mirroring, qualities and formats give the pixels they ask for, from the TIFF master before its derivative exists', async () => {
    expect((await derivativeOf(tiffPage)).derivative_key).toBeNull();
    await checkCombinations('master');
  });

  it('D13 P8 derivatives are made between engine work: while an engine call waits for a slot, a run makes none', async () => {
    let waiting = 1;
    const report = await buildImageDerivatives({
      pool: db.pool,
      blobStore,
      engineWaiting: () => waiting,
    });
    expect(report).toMatchObject({ made: 0, failed: 0, yielded: 1 });
    expect((await derivativeOf(tiffPage)).derivative_key).toBeNull();
    // The engine's queue drained: the next run goes on (the next test checks what it makes).
    waiting = 0;
  });

  it('I4 the derivative is made once by the maintenance job, counted against quota, and answers the same pixels', async () => {
    const usageBefore = await workspaceUsageBytes(db.pool, A.ws);
    const first = await buildImageDerivatives({ pool: db.pool, blobStore });
    // The TIFF and the PNG page; the recording has none.
    expect(first).toMatchObject({ made: 2, failed: 0 });
    expect(first.megapixels).toBeCloseTo(
      (2 * MANIFESTO_SIZE.width * MANIFESTO_SIZE.height) / 1e6,
      2,
    );
    const made = await derivativeOf(tiffPage);
    expect(made.derivative_key).toMatch(new RegExp(`^ws/${A.ws}/[0-9a-f]{64}-`));
    expect((await derivativeOf(audioPage)).derivative_key).toBeNull();
    // Kept in the blob store, a pyramidal tiled TIFF, its bytes counted against the quota.
    const onDisk = join(blobDir, made.derivative_key!);
    expect((await stat(onDisk)).size).toBe(Number(made.size_bytes));
    const meta = await sharp(onDisk).metadata();
    expect([meta.format, meta.width, meta.height, meta.pages]).toEqual(['tiff', 2745, 4445, 6]);
    const png = await derivativeOf(pngPage);
    expect(await workspaceUsageBytes(db.pool, A.ws)).toBe(
      usageBefore + Number(made.size_bytes) + Number(png.size_bytes),
    );
    // A second run does not rebuild: nothing to do, the same blob, made at the same time.
    expect(await buildImageDerivatives({ pool: db.pool, blobStore })).toMatchObject({ made: 0 });
    const again = await derivativeOf(tiffPage);
    expect(again.derivative_key).toBe(made.derivative_key);
    expect(again.created_at).toEqual(made.created_at);
    // The orphan sweep sees the page's reference and leaves the derivative alone.
    const swept = await sweepOrphans({ pool: db.pool, blobStore, graceMs: 0 });
    expect(swept.scheduledBlobs).toBe(0);
    expect((await derivativeOf(tiffPage)).deleted_at).toBeNull();
    // Requests now read the derivative, with the same answers.
    const tile = await image(tiffPage, '0,0,512,512/256,/0/default.jpg');
    expect(tile.headers.get('x-quire-image-source')).toBe('derivative');
    await checkCombinations('derivative');
    expect(await auditInvariants(db.pool)).toEqual([]);
  });

  it('I4 a request the Image API does not allow is a 400 with a stable code; an unknown page is a 404', async () => {
    const cases: Array<[string, string]> = [
      ['abc/max/0/default.jpg', 'invalid_region'],
      ['0,0,10/max/0/default.jpg', 'invalid_region'],
      ['0,0,0,10/max/0/default.jpg', 'invalid_region'],
      ['3000,0,10,10/max/0/default.jpg', 'region_outside_image'],
      ['pct:0,0,101,10/max/0/default.jpg', 'invalid_region'],
      ['full/big/0/default.jpg', 'invalid_size'],
      ['full/0,/0/default.jpg', 'invalid_size'],
      ['full/!100,/0/default.jpg', 'invalid_size'],
      ['0,0,100,100/200,/0/default.jpg', 'upscale_not_requested'],
      ['full/^20000,/0/default.jpg', 'size_too_large'],
      ['full/max/45/default.jpg', 'rotation_unsupported'],
      ['full/max/x/default.jpg', 'invalid_rotation'],
      ['full/max/0/sepia.jpg', 'invalid_quality'],
      ['full/max/0/default.tif', 'format_unsupported'],
      ['full/max/0/default', 'invalid_quality'],
    ];
    for (const [path, code] of cases) {
      const response = await image(tiffPage, path);
      expect({ path, status: response.status }).toEqual({ path, status: 400 });
      expect((await response.json()).error.code).toBe(code);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
    }
    for (const pageId of [999_999, audioPage]) {
      const response = await image(pageId, 'full/max/0/default.jpg', bearer(A.key));
      expect(response.status).toBe(404);
      expect((await response.json()).error.code).toBe('not_found');
      expect((await info(pageId, bearer(A.key))).status).toBe(404);
    }
  });

  it('I4 access as I1: a draft is 404 to anyone but its workspace, a bad key is 401, a published page is open to all without credentials', async () => {
    const tile = '0,0,256,256/128,/0/default.jpg';
    // The PNG page is a draft.
    expect((await image(pngPage, tile)).status).toBe(404);
    expect((await info(pngPage)).status).toBe(404);
    expect((await image(pngPage, tile, bearer(B.key))).status).toBe(404);
    expect((await info(pngPage, bearer(B.key))).status).toBe(404);
    const bad = await image(pngPage, tile, bearer('qk_not_a_key'));
    expect(bad.status).toBe(401);
    expect((await bad.json()).error.code).toBe('unauthenticated');
    const own = await image(pngPage, tile, bearer(A.key));
    expect(own.status).toBe(200);
    expect(own.headers.get('cache-control')).toContain('private');
    // Workspace B's key cannot reach A's page through B's own path either.
    expect((await image(pngPage, tile, bearer(B.key), B.ws)).status).toBe(404);
    expect((await info(tiffPage, bearer(B.key), B.ws)).status).toBe(404);
    // The TIFF page is published: anyone, any origin, no credentials.
    const open = await image(tiffPage, tile, { origin: 'https://viewer.example' });
    expect(open.status).toBe(200);
    expect(open.headers.get('access-control-allow-origin')).toBe('*');
    expect(open.headers.get('access-control-allow-credentials')).toBeNull();
    expect(open.headers.get('cache-control')).toContain('public');
    expect((await info(tiffPage, bearer(B.key))).status).toBe(200);
    const preflight = await imageRoute.OPTIONS!(
      new Request(`${BASE}/iiif/x`, { method: 'OPTIONS' }),
      {},
    );
    expect(preflight.status).toBe(204);
  });

  it('I4 manifests reference the Image API service and carry thumbnails; a TIFF page is painted as a JPEG', async () => {
    const response = await manifestRoute.GET!(
      new Request(`${BASE}/iiif/${A.ws}/manifesto-tiff/manifest`),
      { params: Promise.resolve({ ws: String(A.ws), item: 'manifesto-tiff' }) },
    );
    const manifest = await response.json();
    expect(manifestSchemaErrors(manifest)).toEqual([]);
    const canvas = manifest.items[0];
    const service = `${BASE}/iiif/${A.ws}/image/${tiffPage}`;
    const body = canvas.items[0].items[0].body;
    expect(body).toEqual({
      id: `${service}/full/max/0/default.jpg`,
      type: 'Image',
      format: 'image/jpeg',
      width: 2745,
      height: 4445,
      service: [{ id: service, type: 'ImageService3', profile: 'level2' }],
    });
    expect(canvas.thumbnail).toEqual([
      {
        id: `${service}/full/!256,256/0/default.jpg`,
        type: 'Image',
        format: 'image/jpeg',
        width: 158,
        height: 256,
        service: [{ id: service, type: 'ImageService3', profile: 'level2' }],
      },
    ]);
    // The thumbnail answers with the size the manifest states.
    const thumb = await decoded(await image(tiffPage, 'full/!256,256/0/default.jpg'));
    expect([thumb.width, thumb.height, thumb.meta.format]).toEqual([158, 256, 'jpeg']);
    // A PNG master stays its own painting body (browsers draw it), with the service beside it.
    const draft = await manifestRoute.GET!(
      new Request(`${BASE}/iiif/${A.ws}/manifesto-png/manifest`, { headers: bearer(A.key) }),
      { params: Promise.resolve({ ws: String(A.ws), item: 'manifesto-png' }) },
    );
    const pngCanvas = (await draft.json()).items[0];
    expect(pngCanvas.items[0].items[0].body).toMatchObject({
      id: `${pngCanvas.id}/media`,
      format: 'image/png',
      service: [{ id: `${BASE}/iiif/${A.ws}/image/${pngPage}`, type: 'ImageService3' }],
    });
    expect(pngCanvas.thumbnail[0].id).toBe(
      `${BASE}/iiif/${A.ws}/image/${pngPage}/full/!256,256/0/default.jpg`,
    );
  });

  it('I4 a derivative that does not fit the quota is not made, stages nothing, and the page still answers from its master', async () => {
    const c = await createWorkspace(db.pool, 'Archive C');
    const ingested = await ingestBatch(
      { pool: db.pool, blobStore, publicBaseUrl: BASE },
      c.workspace.id,
      uploadRequest([
        { name: 'itemId', value: 'tight' },
        file(await manifestoTiff(0.5), 'half.tif'),
      ]),
    );
    const pageId = ingested.pages[0]!.pageId;
    const used = await workspaceUsageBytes(db.pool, c.workspace.id);
    await db.pool.query('UPDATE workspaces SET quota_bytes = $2 WHERE id = $1', [
      c.workspace.id,
      used + 10,
    ]);
    const report = await buildImageDerivatives({ pool: db.pool, blobStore });
    expect(report.failed).toBe(1);
    const { rows } = await db.pool.query(
      'SELECT derivative_key, derivative_error FROM pages WHERE id = $1',
      [pageId],
    );
    expect(rows[0]).toEqual({ derivative_key: null, derivative_error: 'quota_exceeded' });
    expect(await workspaceUsageBytes(db.pool, c.workspace.id)).toBe(used);
    const pending = await db.pool.query(
      `SELECT count(*)::int AS n FROM blob_cleanups WHERE workspace_id = $1 AND status IN ('staged', 'due', 'failing')`,
      [c.workspace.id],
    );
    expect(pending.rows[0].n).toBe(0);
    // Not tried again at once (the retry waits an hour), and the page still answers.
    expect(await buildImageDerivatives({ pool: db.pool, blobStore })).toMatchObject({ failed: 0 });
    const tile = await image(pageId, 'full/100,/0/default.png', bearer(c.apiKey), c.workspace.id);
    expect(tile.headers.get('x-quire-image-source')).toBe('master');
    expect((await decoded(tile)).width).toBe(100);
  });

  it('I4 the derivative is removed with its page: handed to the fenced cleanup and deleted from the store', async () => {
    await buildImageDerivatives({ pool: db.pool, blobStore });
    const made = await derivativeOf(pngPage);
    expect(made.derivative_key).not.toBeNull();
    const usageBefore = await workspaceUsageBytes(db.pool, A.ws);
    const deleted = await deleteItem(db.pool, A.ws, 'manifesto-png');
    // The master and its derivative.
    expect(deleted.blobsHandedToCleanup).toBe(2);
    const report = await runBlobCleanup({ pool: db.pool, blobStore });
    expect(report.deleted).toBe(2);
    await expect(stat(join(blobDir, made.derivative_key!))).rejects.toThrow();
    const { rows } = await db.pool.query('SELECT deleted_at FROM blobs WHERE key = $1', [
      made.derivative_key,
    ]);
    expect(rows[0].deleted_at).not.toBeNull();
    expect(await workspaceUsageBytes(db.pool, A.ws)).toBeLessThan(
      usageBefore - Number(made.size_bytes),
    );
    expect((await image(pngPage, 'full/max/0/default.jpg', bearer(A.key))).status).toBe(404);
    expect(await auditInvariants(db.pool)).toEqual([]);
  });

  it('I4 JPEG, WebP, tiled TIFF and multi-page TIFF masters all display and get their derivative', async () => {
    const scan = sharp(MANIFESTO_PAGE).resize(800).toColourspace('srgb');
    const frame = await sharp(await manifestoTiff(0.25))
      .png()
      .toBuffer();
    const masters: Array<[string, Buffer]> = [
      ['scan.jpg', await scan.clone().jpeg().toBuffer()],
      ['scan.webp', await scan.clone().webp().toBuffer()],
      [
        'tiled.tif',
        await scan.clone().tiff({ tile: true, tileWidth: 128, tileHeight: 128 }).toBuffer(),
      ],
      // Two frames; the page is the first (I5 makes one page per frame).
      [
        'frames.tif',
        await sharp([frame, frame], { join: { animated: true } })
          .tiff({ compression: 'deflate' })
          .toBuffer(),
      ],
    ];
    const d = await createWorkspace(db.pool, 'Archive D');
    const ids: number[] = [];
    for (const [name, bytes] of masters) {
      const ingested = await ingestBatch(
        { pool: db.pool, blobStore, publicBaseUrl: BASE },
        d.workspace.id,
        uploadRequest([{ name: 'itemId', value: name.replace('.', '-') }, file(bytes, name)]),
      );
      ids.push(ingested.pages[0]!.pageId);
    }
    const auth = bearer(d.apiKey);
    for (const [index, pageId] of ids.entries()) {
      const thumb = await decoded(
        await image(pageId, 'full/!200,200/0/default.jpg', auth, d.workspace.id),
      );
      expect({ master: masters[index]![0], height: thumb.height }).toEqual({
        master: masters[index]![0],
        height: 200,
      });
    }
    await buildImageDerivatives({ pool: db.pool, blobStore });
    for (const [index, pageId] of ids.entries()) {
      expect({
        master: masters[index]![0],
        key: (await derivativeOf(pageId)).derivative_key,
      }).toEqual({
        master: masters[index]![0],
        key: expect.stringMatching(/^ws\//),
      });
      const response = await image(pageId, '0,0,256,256/128,/0/default.png', auth, d.workspace.id);
      expect(response.headers.get('x-quire-image-source')).toBe('derivative');
      expect((await decoded(response)).width).toBe(128);
    }
  });

  it('I4 a master that does not decode is recorded undecodable, never tried again, and its images are a 422', async () => {
    const e = await createWorkspace(db.pool, 'Archive E');
    // A PNG whose header declares more rows than its data holds: ingest reads the header only.
    const ingested = await ingestBatch(
      { pool: db.pool, blobStore, publicBaseUrl: BASE },
      e.workspace.id,
      uploadRequest([
        { name: 'itemId', value: 'broken' },
        file(png(40, 30, { width: 400, height: 300 }), 'b.png'),
      ]),
    );
    const pageId = ingested.pages[0]!.pageId;
    const first = await buildImageDerivatives({ pool: db.pool, blobStore });
    expect(first.failed).toBeGreaterThanOrEqual(1);
    const state = async () =>
      (
        await db.pool.query(
          'SELECT derivative_key, derivative_error, derivative_tried_at FROM pages WHERE id = $1',
          [pageId],
        )
      ).rows[0];
    const failed = await state();
    expect(failed).toMatchObject({ derivative_key: null, derivative_error: 'undecodable' });
    // Not tried again, even once the retry pause is long past (a quota refusal would be).
    const later = () => new Date(Date.now() + 48 * 60 * 60_000);
    await buildImageDerivatives({ pool: db.pool, blobStore, now: later });
    expect(await state()).toEqual(failed);
    const auth = bearer(e.apiKey);
    const response = await image(pageId, 'full/max/0/default.jpg', auth, e.workspace.id);
    expect(response.status).toBe(422);
    expect((await response.json()).error.code).toBe('image_undecodable');
    expect((await info(pageId, auth, e.workspace.id)).status).toBe(200);
  });

  it('I4 the derivative write is fenced: of two builds at once one attaches, and a page deleted meanwhile takes none; no byte is left behind', async () => {
    const f = await createWorkspace(db.pool, 'Archive F');
    const deps = { pool: db.pool, blobStore, publicBaseUrl: BASE };
    const upload = async (item: string) =>
      (
        await ingestBatch(
          deps,
          f.workspace.id,
          uploadRequest([
            { name: 'itemId', value: item },
            file(await manifestoTiff(0.25), `${item}.tif`),
          ]),
        )
      ).pages[0]!.pageId;
    const raced = await upload('raced');
    const gone = await upload('gone');
    const candidates = await pagesNeedingDerivative(db.pool, new Date(), 1000);
    const candidate = (id: number) => candidates.find((c) => c.pageId === id)!;

    const outcomes = await Promise.all([
      makePageDerivative({ pool: db.pool, blobStore }, candidate(raced)),
      makePageDerivative({ pool: db.pool, blobStore }, candidate(raced)),
    ]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['failed', 'made']);
    expect(outcomes.find((o) => o.kind === 'failed')).toEqual({
      kind: 'failed',
      code: 'derivative_not_attached',
    });
    const attached = (await derivativeOf(raced)).derivative_key;
    expect(outcomes.find((o) => o.kind === 'made')).toMatchObject({ key: attached });

    // The page goes after its candidate was read, before its derivative is attached.
    await deleteItem(db.pool, f.workspace.id, 'gone');
    expect(await makePageDerivative({ pool: db.pool, blobStore }, candidate(gone))).toEqual({
      kind: 'failed',
      code: 'derivative_not_attached',
    });
    expect((await derivativeOf(gone)).derivative_key).toBeNull();
    await runBlobCleanup({ pool: db.pool, blobStore });

    // What the workspace holds is exactly its live blobs: the raced page's master and its one
    // derivative. No reservation is pending and no other object of the workspace exists.
    const live = await db.pool.query(
      'SELECT key, size_bytes FROM blobs WHERE workspace_id = $1 AND deleted_at IS NULL ORDER BY key',
      [f.workspace.id],
    );
    expect(live.rows.map((r) => r.key)).toContain(attached);
    expect(live.rows).toHaveLength(2);
    expect(await workspaceUsageBytes(db.pool, f.workspace.id)).toBe(
      live.rows.reduce((sum, r) => sum + Number(r.size_bytes), 0),
    );
    const objects: string[] = [];
    for await (const o of blobStore.list()) {
      if (o.key.startsWith(`ws/${f.workspace.id}/`)) objects.push(o.key);
    }
    expect(objects.sort()).toEqual(live.rows.map((r) => r.key).sort());
    expect(await auditInvariants(db.pool)).toEqual([]);
  });
});

/** The same requests against the master or the derivative: sizes exact, pixels where they belong. */
async function checkCombinations(source: 'master' | 'derivative') {
  const get = async (path: string) => {
    const response = await image(tiffPage, path);
    expect(response.headers.get('x-quire-image-source')).toBe(source);
    return decoded(response);
  };
  const full = await get('full/max/0/default.jpg');
  expect([full.width, full.height, full.meta.format]).toEqual([2745, 4445, 'jpeg']);
  expect(isRed(full.pixel(RED_PATCH.x + 150, RED_PATCH.y + 150))).toBe(true);
  expect(isBlue(full.pixel(BLUE_PATCH.x + 150, BLUE_PATCH.y + 150))).toBe(true);

  const fit = await get('full/!256,256/0/default.jpg');
  expect([fit.width, fit.height]).toEqual([158, 256]);

  const square = await get('square/256,/0/default.png');
  expect([square.width, square.height, square.meta.format]).toEqual([256, 256, 'png']);

  // The red patch alone, by pixels: colour keeps it red, gray makes it one grey, bitonal black.
  const patchBox = `${RED_PATCH.x},${RED_PATCH.y},${RED_PATCH.w},${RED_PATCH.h}`;
  const colour = await get(`${patchBox}/150,/0/color.png`);
  expect([colour.width, colour.height]).toEqual([150, 150]);
  expect(isRed(colour.pixel(75, 75))).toBe(true);
  const gray = await get(`${patchBox}/150,150/0/gray.png`);
  const g = gray.pixel(75, 75);
  expect(gray.channels === 1 || (g[0] === g[1] && g[1] === g[2])).toBe(true);
  expect(g[0]).toBeGreaterThan(40);
  expect(g[0]).toBeLessThan(120);
  const bitonal = await get(`${patchBox}/,150/0/bitonal.png`);
  expect(bitonal.width).toBe(150);
  expect(bitonal.pixel(75, 75)[0]).toBe(0);

  // Percentages: the top-left quarter at a tenth, as WebP.
  const pct = await get('pct:0,0,50,50/pct:10/0/default.webp');
  expect([pct.width, pct.height, pct.meta.format]).toEqual([137, 222, 'webp']);

  // A tile as OpenSeadragon asks for it at scale factor 2, and a cut-off edge tile at 1.
  const tile = await get('0,0,512,512/256,/0/default.jpg');
  expect([tile.width, tile.height]).toEqual([256, 256]);
  expect(
    isRed(tile.pixel(Math.round((RED_PATCH.x + 150) / 2), Math.round((RED_PATCH.y + 150) / 2))),
  ).toBe(true);
  const edge = await get('2560,4352,256,256/185,/0/default.jpg');
  expect([edge.width, edge.height]).toEqual([185, 93]);

  // Rotation after scaling: the top-left quarter (red patch at its top left) turned 90°
  // clockwise puts the patch at the top right; mirrored, at the top right unturned.
  const quarter = '0,0,1372,2222';
  const turned = await get(`${quarter}/!200,200/90/default.png`);
  expect([turned.width, turned.height]).toEqual([200, 123]);
  const rx = (RED_PATCH.y + 150) / 2222;
  const ry = (RED_PATCH.x + 150) / 1372;
  expect(isRed(turned.pixel(Math.round(200 - rx * 200), Math.round(ry * 123)))).toBe(true);
  const upside = await get(`${quarter}/!200,200/180/default.png`);
  expect([upside.width, upside.height]).toEqual([123, 200]);
  expect(isRed(upside.pixel(Math.round(123 - ry * 123), Math.round(200 - rx * 200)))).toBe(true);
  const mirrored = await get(`${quarter}/!200,200/!0/default.png`);
  expect([mirrored.width, mirrored.height]).toEqual([123, 200]);
  expect(isRed(mirrored.pixel(Math.round(123 - ry * 123), Math.round(rx * 200)))).toBe(true);
  expect(isRed(mirrored.pixel(Math.round(ry * 123), Math.round(rx * 200)))).toBe(false);

  // Upscaling only when asked for.
  const up = await get(`${patchBox}/^600,/0/default.jpg`);
  expect([up.width, up.height]).toEqual([600, 600]);
  expect(isRed(up.pixel(300, 300))).toBe(true);
}
