import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
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
 * TIFF, JPEG-compressed, each level half the one above, down to one tile. The Image API reads
 * tiles from it without decoding the master. It is a blob like an upload and written the same
 * fenced way (U2/U3): the bytes are reserved against quota before they are stored, and the
 * blob row, the page's reference and the retired reservation commit in one transaction.
 */

export const DERIVATIVE_MEDIA_TYPE = 'image/tiff';
/** The JPEG quality of the pyramid's tiles: the answers are re-encoded from them. */
const TILE_QUALITY = 90;

export type DerivativeOutcome =
  | { kind: 'made'; key: string; sizeBytes: number; buildMs: number; megapixels: number }
  | { kind: 'failed'; code: string };

/** Writes the pyramid of the master at `masterPath` to `outPath`; returns the image's size. */
export async function writePyramid(
  masterPath: string,
  outPath: string,
): Promise<{ width: number; height: number }> {
  // The first frame of a multi-page master; orientation kept as stored, since line boxes and
  // canvas sizes are in the stored pixels.
  let image = sharp(masterPath, { page: 0, limitInputPixels: false });
  const meta = await image.metadata();
  // JPEG tiles hold no alpha: a transparent master is laid on white, as a page is.
  if (meta.hasAlpha) image = image.flatten({ background: '#ffffff' });
  const info = await image
    .tiff({
      tile: true,
      pyramid: true,
      tileWidth: TILE_SIZE,
      tileHeight: TILE_SIZE,
      compression: 'jpeg',
      quality: TILE_QUALITY,
    })
    .toFile(outPath);
  return { width: info.width, height: info.height };
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
    let size: { width: number; height: number };
    try {
      size = await writePyramid(masterPath, local);
    } catch {
      await recordDerivativeFailure(deps.pool, page.pageId, FINAL_DERIVATIVE_ERROR, now());
      return { kind: 'failed', code: FINAL_DERIVATIVE_ERROR };
    }
    const buildMs = performance.now() - started;
    const sizeBytes = (await stat(local)).size;
    const outcome = await storeDerivative(deps, page, local, sizeBytes, now);
    if (outcome.kind !== 'made') return outcome;
    return {
      kind: 'made',
      key: outcome.key,
      sizeBytes,
      buildMs,
      megapixels: (size.width * size.height) / 1e6,
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
