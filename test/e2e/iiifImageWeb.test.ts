import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'pg';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { buildImageDerivatives } from '../../activities/maintenance';
import { createLocalBlobStore } from '../../blobs';
import { publishPage } from '../../db/pages';
import { createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { consoleStack } from '../support/consoleStack';
import { manifestoTiff } from '../support/tiffMasters';
import { file, uploadRequest } from '../support/uploadFixtures';

/**
 * I4 through the production build: `next start` routes the Image API's paths (a folder named
 * `info.json`, four request segments with `^`, `!` and `pct:` in them, percent-encoded or
 * not) to the handlers the other tests call directly, and answers with the same bytes.
 */
const PUBLIC_URL = 'https://quire.test';
let blobDir: string;
let ws: number;
let pageId: number;
let draftPageId: number;

// Registered before the stack: removed after its database.
afterAll(async () => {
  await rm(blobDir, { recursive: true, force: true });
});

const stack = consoleStack({
  browser: false,
  beforeWeb: ({ db }) => publishedAndDraftTiffs(db.pool),
  web: () => ({
    QUIRE_SECRET_KEY: randomBytes(32).toString('hex'),
    QUIRE_BLOB_DIR: blobDir,
    QUIRE_PUBLIC_URL: PUBLIC_URL,
    TEMPORAL_ADDRESS: process.env.QUIRE_TEST_TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    LOG_LEVEL: 'warn',
  }),
  timeout: 900_000,
});

/** A published TIFF page and a draft one, their pyramidal derivatives made. */
async function publishedAndDraftTiffs(pool: Pool): Promise<void> {
  blobDir = await mkdtemp(join(tmpdir(), 'quire-iiif-web-'));
  const blobStore = createLocalBlobStore(blobDir);
  const created = await createWorkspace(pool, 'Archive');
  ws = created.workspace.id;
  const deps = { pool, blobStore, publicBaseUrl: PUBLIC_URL };
  const tiff = await ingestBatch(
    deps,
    ws,
    uploadRequest([
      { name: 'itemId', value: 'manifesto' },
      file(await manifestoTiff(0.5), 'm.tif'),
    ]),
  );
  pageId = tiff.pages[0]!.pageId;
  await publishPage(pool, { workspaceId: ws, pageId, expectedRevision: 0 });
  const draft = await ingestBatch(
    deps,
    ws,
    uploadRequest([{ name: 'itemId', value: 'draft' }, file(await manifestoTiff(0.25), 'd.tif')]),
  );
  draftPageId = draft.pages[0]!.pageId;
  await buildImageDerivatives({ pool, blobStore });
}

describe('I4 the Image API in the production build', () => {
  it('I4 next start serves info.json, the base URI redirect, tiles with ^ ! and pct:, and stable 400s', async () => {
    const service = `${stack.web.url}/iiif/${ws}/image/${pageId}`;
    const info = await fetch(`${service}/info.json`, {
      headers: { accept: 'application/ld+json' },
    });
    expect(info.status).toBe(200);
    expect(info.headers.get('content-type')).toContain('http://iiif.io/api/image/3/context.json');
    expect(info.headers.get('access-control-allow-origin')).toBe('*');
    expect(await info.json()).toMatchObject({
      id: `${PUBLIC_URL}/iiif/${ws}/image/${pageId}`,
      type: 'ImageService3',
      profile: 'level2',
      width: 1373,
      height: 2223,
    });
    const redirect = await fetch(service, { redirect: 'manual' });
    expect(redirect.status).toBe(303);
    expect(redirect.headers.get('location')).toBe(
      `${PUBLIC_URL}/iiif/${ws}/image/${pageId}/info.json`,
    );

    for (const path of [
      'pct:0,0,10,10/^pct:150/!90/gray.png',
      'pct%3A0%2C0%2C10%2C10/%5Epct%3A150/%2190/gray.png',
    ]) {
      const response = await fetch(`${service}/${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/png');
      expect(response.headers.get('x-quire-image-source')).toBe('derivative');
      const meta = await sharp(Buffer.from(await response.arrayBuffer())).metadata();
      // The region is 137 x 222, upscaled by half to 206 x 333, then mirrored and turned.
      expect([meta.width, meta.height]).toEqual([333, 206]);
    }
    const tile = await fetch(`${service}/0,0,512,512/256,/0/default.webp`);
    expect(tile.headers.get('content-type')).toBe('image/webp');
    const tileMeta = await sharp(Buffer.from(await tile.arrayBuffer())).metadata();
    expect([tileMeta.format, tileMeta.width, tileMeta.height]).toEqual(['webp', 256, 256]);

    const refused = await fetch(`${service}/full/max/45/default.jpg`);
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.code).toBe('rotation_unsupported');
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
    // A draft is not found for the public, in the production build too.
    const draft = await fetch(`${stack.web.url}/iiif/${ws}/image/${draftPageId}/info.json`);
    expect(draft.status).toBe(404);
  });
});
