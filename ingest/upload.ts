import type { Readable } from 'node:stream';
import {
  type BlobStore,
  BlobTooLargeError,
  canonicalKeyFor,
  newUploadId,
  temporaryKeyFor,
} from '../blobs/store';
import {
  type ByteSource,
  checkImageLimits,
  inspectMedia,
  isPdfHeader,
  type MediaInfo,
  type MediaLimits,
  MediaRejection,
  SNIFF_BYTES,
  sniffMediaType,
} from '../core/media';
import { QuotaExceededError, settleStagedCleanup, stageBlobCleanup } from '../db/blobs';
import type { Pool } from '../db/pool';
import type { StoredFile } from './commit';
import { IngestError, type IngestLimits } from './request';

/**
 * Storing one stream of an ingest, an uploaded file or a page rendered from a document (I5),
 * in the order ingest/batch.ts lists: a staged reservation, the bytes to a temporary, the
 * bytes inspected, the reservation settled and the object given its canonical name.
 */

/** The crash points of a stored stream (a subset of batch.ts `INGEST_STEPS`). */
export type UploadStep = 'after_staging' | 'after_temp_write' | 'after_rename';

/** One request's uploads: where they are written, and what has been written so far. */
export interface BatchUploads {
  pool: Pool;
  blobStore: BlobStore;
  workspaceId: number;
  limits: IngestLimits;
  now: () => Date;
  globalQuotaBytes: number | null;
  /** How long a staged reservation holds before the cleanup may take it. */
  reservationMs: number;
  /** I5: resolution PDF pages are rendered at. */
  pdfDpi: number;
  /** Awaited at each crash point (the chaos tests kill a child there). */
  step: (name: UploadStep) => Promise<void>;
  /** The request's Content-Length, NaN when it declared none. */
  declaredLength: number;
  /** Bytes of the uploaded files written so far (a document's pages are not request bytes). */
  uploadedBytes: number;
  /** The files stored so far, in upload order; a document's pages in page order. */
  stored: StoredFile[];
  /** Every staged row: a refused request hands them all to the fenced deletion. */
  staged: number[];
  /** I5: the uploaded PDFs and multi-page TIFFs, whose pages were stored one by one. */
  documentSources: number[];
}

export interface WrittenUpload {
  cleanupId: number;
  uploadId: string;
  temporaryKey: string;
  written: { sha256: string; size: number };
  bytes: ByteSource;
  limitedBy: Awaited<ReturnType<typeof stageBlobCleanup>>['limitedBy'];
}

const HEAD_BYTES = 64 * 1024;

/**
 * Steps 1-2 for one stream: a staged reservation, then the bytes to a temporary. `sniff`
 * refuses an unsupported upload from its first bytes; a page rendered from a document
 * (I5) is Quire's own output and is inspected once written.
 */
export async function writeUpload(
  uploads: BatchUploads,
  index: number,
  stream: Readable,
  reservation: number,
  sniff: boolean,
): Promise<WrittenUpload> {
  const { workspaceId, limits } = uploads;
  const uploadId = newUploadId();
  const temporaryKey = temporaryKeyFor(workspaceId, uploadId);
  const { cleanupId, reservedBytes, limitedBy } = await stageBlobCleanup(uploads.pool, {
    workspaceId,
    objectKey: temporaryKey,
    temporaryKey,
    sizeBytes: reservation,
    reserveUntil: new Date(uploads.now().getTime() + uploads.reservationMs),
    globalQuotaBytes: uploads.globalQuotaBytes,
    fitToQuota: true,
  });
  uploads.staged.push(cleanupId);
  await uploads.step('after_staging');

  const head = new Uint8Array(HEAD_BYTES);
  let headLength = 0;
  let sniffed = !sniff;
  let written: { sha256: string; size: number };
  try {
    written = await uploads.blobStore.writeTemporary(temporaryKey, stream, {
      maxBytes: reservedBytes,
      onChunk: (chunk) => {
        if (headLength < HEAD_BYTES) {
          const take = Math.min(chunk.length, HEAD_BYTES - headLength);
          head.set(chunk.subarray(0, take), headLength);
          headLength += take;
        }
        // Refuse as early as the bytes allow: an unsupported type or a declared canvas
        // above the pixel limit stops the upload before the rest is written.
        if (!sniffed && headLength >= 32) {
          sniffed = true;
          earlyChecks(head.subarray(0, headLength), limits);
        }
      },
    });
  } catch (error) {
    if (error instanceof BlobTooLargeError && limitedBy) {
      throw new QuotaExceededError(
        limitedBy.scope,
        limitedBy.limitBytes,
        limitedBy.usedBytes,
        error.maxBytes + 1,
      );
    }
    if (error instanceof BlobTooLargeError) {
      throw new IngestError(
        'file_too_large',
        `a file is larger than ${limits.maxFileBytes} bytes`,
        index,
      );
    }
    throw error;
  }
  await uploads.step('after_temp_write');
  const bytes: ByteSource = {
    size: written.size,
    read: async (offset, length) =>
      offset + length <= headLength
        ? head.subarray(offset, offset + length)
        : uploads.blobStore.readRange(temporaryKey, offset, length),
  };
  return { cleanupId, uploadId, temporaryKey, written, bytes, limitedBy };
}

/** Step 3: magic bytes, pixel and duration limits (U4); a refusal names the file. */
export async function inspectUpload(
  uploads: BatchUploads,
  index: number,
  upload: WrittenUpload,
): Promise<MediaInfo> {
  try {
    return await inspectMedia(upload.bytes, uploads.limits);
  } catch (error) {
    throw fileRefusal(error, index);
  }
}

/** Steps 3-4: the bytes inspected, the reservation settled, the object given its name. */
export async function settleUpload(
  uploads: BatchUploads,
  index: number,
  upload: WrittenUpload,
  filename: string | null,
  inspected?: MediaInfo,
): Promise<StoredFile> {
  const { workspaceId } = uploads;
  const info = inspected ?? (await inspectUpload(uploads, index, upload));
  const key = canonicalKeyFor(workspaceId, upload.written.sha256, upload.uploadId);
  await settleStagedCleanup(uploads.pool, upload.cleanupId, {
    workspaceId,
    objectKey: key,
    sizeBytes: upload.written.size,
    globalQuotaBytes: uploads.globalQuotaBytes,
  });
  await uploads.blobStore.promote(upload.temporaryKey, key);
  await uploads.step('after_rename');
  return {
    index,
    cleanupId: upload.cleanupId,
    key,
    sha256: upload.written.sha256,
    size: upload.written.size,
    info,
    filename,
  };
}

/** A media refusal as the refusal of the request's file `index`; anything else unchanged. */
export function fileRefusal(error: unknown, index: number): unknown {
  if (error instanceof MediaRejection) return new IngestError(error.code, error.message, index);
  return error;
}

function earlyChecks(head: Uint8Array, limits: MediaLimits): void {
  if (isPdfHeader(head)) return;
  const type = sniffMediaType(head.subarray(0, Math.max(SNIFF_BYTES, head.length)));
  if (!type) {
    throw new MediaRejection(
      'unsupported_media_type',
      'the file is not a PDF, PNG, JPEG, TIFF, WebP, WAV, FLAC, MP3, OGG or M4A file',
    );
  }
  const v = new DataView(head.buffer, head.byteOffset, head.byteLength);
  if (type === 'image/png' && head.length >= 24)
    checkImageLimits(v.getUint32(16), v.getUint32(20), limits);
}
