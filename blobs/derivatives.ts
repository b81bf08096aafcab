import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { TILE_SIZE } from '../core/interchange/imageApi';
import {
  insertBlob,
  lockBlobForReference,
  lockStagedCleanups,
  QuotaExceededError,
  releaseStagedCleanup,
  retireBlobCleanup,
  settleStagedCleanup,
  stageBlobCleanup,
} from '../db/blobs';
import {
  attachDerivative,
  type DerivativeCandidate,
  FINAL_DERIVATIVE_ERROR,
  recordDerivativeFailure,
} from '../db/derivatives';
import { type Pool, withTransaction } from '../db/pool';
import { processCleanup } from './cleanup';
import { type BlobStore, canonicalKeyFor, newUploadId, temporaryKeyFor } from './store';

/**
 * I4: a page's pyramidal derivative, made once from its master: a tiled (256 x 256) pyramidal
 * TIFF, each level half the one above, down to one tile. The Image API reads tiles from it
 * without decoding the master. It is a blob like an upload and written the same fenced way
 * (U2/U3): the bytes are reserved against quota before they are stored, and the blob row, the
 * page's reference and the retired reservation commit in one transaction.
 *
 * D13: the pyramid is compressed for what the master holds. A photograph or a grey scan is
 * JPEG (one channel when the page has no colour); a bilevel master (1 bit a pixel) and a page
 * that JPEG would make larger than `DERIVATIVE_BUDGET` times its master (rendered text: large
 * flat areas and sharp edges) are deflate, which keeps their pixels exactly.
 */

export const DERIVATIVE_MEDIA_TYPE = 'image/tiff';
/**
 * The JPEG quality of the pyramid's tiles: the answers are re-encoded from them. Below 90
 * libvips subsamples chroma (4:2:0), which makes a colour pyramid about a third the size.
 */
const TILE_QUALITY = 85;
/** D13: a derivative holds at most this many times its master's bytes, where it can. */
export const DERIVATIVE_BUDGET = 1.5;
/** Largest difference between a pixel's channels for a page to count as grey. */
const GREY_TOLERANCE = 8;

export type PyramidEncoding = 'jpeg' | 'deflate';

export type DerivativeOutcome =
  | {
      kind: 'made';
      key: string;
      sizeBytes: number;
      buildMs: number;
      megapixels: number;
      encoding: PyramidEncoding;
    }
  | { kind: 'failed'; code: string };

export interface Pyramid {
  width: number;
  height: number;
  encoding: PyramidEncoding;
  /** Channels kept: 1 for a grey or bilevel page, 3 for colour. */
  channels: 1 | 3;
  sizeBytes: number;
}

/** True when no pixel of a small rendition differs between its channels by more than a step. */
async function looksGrey(masterPath: string): Promise<boolean> {
  const { data, info } = await sharp(masterPath, { page: 0, limitInputPixels: false })
    .flatten({ background: '#ffffff' })
    .resize(512, 512, { fit: 'inside', withoutEnlargement: true })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels < 3) return true;
  for (let i = 0; i < data.length; i += info.channels) {
    const r = data[i]!;
    const g = data[i + 1]!;
    const b = data[i + 2]!;
    if (Math.abs(r - g) > GREY_TOLERANCE || Math.abs(g - b) > GREY_TOLERANCE) return false;
  }
  return true;
}

/**
 * Writes the pyramid of the master at `masterPath` to `outPath`, in the encoding that suits
 * the master (see above), and says what it wrote.
 */
export async function writePyramid(masterPath: string, outPath: string): Promise<Pyramid> {
  const meta = await sharp(masterPath, { page: 0, limitInputPixels: false }).metadata();
  const masterBytes = (await stat(masterPath)).size;
  const bilevel = meta.bitsPerSample === 1;
  const grey = bilevel || (meta.channels ?? 3) <= 2 || (await looksGrey(masterPath));
  const channels = grey ? 1 : 3;
  const write = async (encoding: PyramidEncoding, path: string): Promise<Pyramid> => {
    // The first frame of a multi-page master; orientation kept as stored, since line boxes
    // and canvas sizes are in the stored pixels. A transparent master is laid on white, as a
    // page is.
    let image = sharp(masterPath, { page: 0, limitInputPixels: false });
    if (meta.hasAlpha) image = image.flatten({ background: '#ffffff' });
    if (grey) image = image.toColourspace('b-w');
    const compression =
      encoding === 'jpeg'
        ? ({ compression: 'jpeg', quality: TILE_QUALITY } as const)
        : ({ compression: 'deflate', predictor: 'none' } as const);
    const info = await image
      .tiff({
        tile: true,
        pyramid: true,
        tileWidth: TILE_SIZE,
        tileHeight: TILE_SIZE,
        ...compression,
      })
      .toFile(path);
    return {
      width: info.width,
      height: info.height,
      encoding,
      channels,
      sizeBytes: (await stat(path)).size,
    };
  };
  if (bilevel) return write('deflate', outPath);
  const jpeg = await write('jpeg', outPath);
  if (jpeg.sizeBytes <= masterBytes * DERIVATIVE_BUDGET) return jpeg;
  const alternative = `${outPath}.deflate`;
  try {
    const deflate = await write('deflate', alternative);
    if (deflate.sizeBytes >= jpeg.sizeBytes) return jpeg;
    await rename(alternative, outPath);
    return deflate;
  } finally {
    await rm(alternative, { force: true });
  }
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' && /^[a-z_]{1,64}$/.test(code) ? code : 'derivative_failed';
}

/**
 * Makes and attaches the derivative of one page. A master that does not decode is recorded
 * as final (`undecodable`); a full quota or a store outage are recorded and tried again by a
 * later run. Nothing is left behind by a try that fails: its reservation goes to the fenced
 * cleanup at once.
 */
export async function makePageDerivative(
  deps: { pool: Pool; blobStore: BlobStore; globalQuotaBytes?: number | null; now?: () => Date },
  page: DerivativeCandidate,
): Promise<DerivativeOutcome> {
  const now = deps.now ?? (() => new Date());
  const started = performance.now();
  const local = join(tmpdir(), `quire-derivative-${randomUUID()}.tif`);
  try {
    const masterPath = await deps.blobStore.localPath(page.masterKey);
    let pyramid: Pyramid;
    try {
      pyramid = await writePyramid(masterPath, local);
    } catch {
      await recordDerivativeFailure(deps.pool, page.pageId, FINAL_DERIVATIVE_ERROR, now());
      return { kind: 'failed', code: FINAL_DERIVATIVE_ERROR };
    }
    const buildMs = performance.now() - started;
    const sizeBytes = pyramid.sizeBytes;
    const outcome = await storeDerivative(deps, page, local, sizeBytes, now);
    if (outcome.kind !== 'made') return outcome;
    return {
      kind: 'made',
      key: outcome.key,
      sizeBytes,
      buildMs,
      megapixels: (pyramid.width * pyramid.height) / 1e6,
      encoding: pyramid.encoding,
    };
  } catch (error) {
    const code = codeOf(error);
    await recordDerivativeFailure(deps.pool, page.pageId, code, now());
    return { kind: 'failed', code };
  } finally {
    await rm(local, { force: true });
  }
}

async function storeDerivative(
  deps: { pool: Pool; blobStore: BlobStore; globalQuotaBytes?: number | null },
  page: DerivativeCandidate,
  local: string,
  sizeBytes: number,
  now: () => Date,
): Promise<{ kind: 'made'; key: string } | { kind: 'failed'; code: string }> {
  const uploadId = newUploadId();
  const temporaryKey = temporaryKeyFor(page.workspaceId, uploadId);
  let cleanupId: number;
  try {
    // U2: the exact size is known, so the reservation is exact; a full quota stages nothing.
    ({ cleanupId } = await stageBlobCleanup(deps.pool, {
      workspaceId: page.workspaceId,
      objectKey: temporaryKey,
      temporaryKey,
      sizeBytes,
      reserveUntil: new Date(now().getTime() + 60 * 60 * 1000),
      globalQuotaBytes: deps.globalQuotaBytes ?? null,
    }));
  } catch (error) {
    if (error instanceof QuotaExceededError) {
      await recordDerivativeFailure(deps.pool, page.pageId, error.code, now());
      return { kind: 'failed', code: error.code };
    }
    throw error;
  }
  try {
    const written = await deps.blobStore.writeTemporary(temporaryKey, createReadStream(local));
    const key = canonicalKeyFor(page.workspaceId, written.sha256, uploadId);
    await settleStagedCleanup(deps.pool, cleanupId, {
      workspaceId: page.workspaceId,
      objectKey: key,
      sizeBytes: written.size,
      globalQuotaBytes: deps.globalQuotaBytes ?? null,
    });
    await deps.blobStore.promote(temporaryKey, key);
    await withTransaction(deps.pool, async (tx) => {
      await lockStagedCleanups(tx, [cleanupId]);
      await insertBlob(tx, {
        key,
        workspaceId: page.workspaceId,
        sha256hex: written.sha256,
        sizeBytes: written.size,
        mediaType: DERIVATIVE_MEDIA_TYPE,
      });
      await lockBlobForReference(tx, page.workspaceId, key);
      await attachDerivative(tx, {
        pageId: page.pageId,
        workspaceId: page.workspaceId,
        masterKey: page.masterKey,
        derivativeKey: key,
      });
      await retireBlobCleanup(tx, cleanupId);
    });
    return { kind: 'made', key };
  } catch (error) {
    // The page went (or took another derivative) meanwhile, or the store failed: the bytes
    // written so far go through the same fenced deletion a refused upload's do.
    try {
      await releaseStagedCleanup(deps.pool, cleanupId);
      await processCleanup(deps.pool, deps.blobStore, cleanupId, now(), { forget: true });
    } catch {
      // Still pending and due: the cleanup schedule finishes it.
    }
    throw error;
  }
}
