import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web';
import busboy from 'busboy';
import {
  type BlobStore,
  BlobTooLargeError,
  canonicalKeyFor,
  newUploadId,
  temporaryKeyFor,
} from '../blobs/store';
import { DEFAULT_PUBLIC_URL } from '../core/config';
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
import { type BatchResult, findBatchByIdempotencyKey } from '../db/ingest';
import type { Pool } from '../db/pool';
import { type CreateJobs, commitBatch, Replay, type StoredFile } from './commit';
import { discardStagedUploads } from './deletion';
import { ingestPdf, ingestTiffFrames, type StorePage } from './documents';
import {
  applyField,
  DEFAULT_INGEST_LIMITS,
  emptyFields,
  FILE_FIELDS,
  IngestError,
  type IngestLimits,
  safeName,
} from './request';
import { discardRestOf } from './requestBody';
import { readTranscriptPart, TRANSCRIPT_FIELD } from './transcripts';

/**
 * The ingest behind `POST /api/v1/workspaces/{ws}/batches` (SPEC §7, U1-U4), as a function
 * over a Web `Request` so the Next.js route, tests and the benchmark share it.
 *
 * Per file, in this order (each step is a crash point the chaos tests kill a child at):
 *   1. stage a cleanup row reserving the bytes against both quotas (U2)   -> after_staging
 *   2. stream the part to a `.quire-upload-*` temporary, hashing, fsync    -> after_temp_write
 *   3. inspect the bytes (magic bytes, pixel and duration limits, U4)
 *   4. settle the row on the canonical key and exact size, then rename      -> after_rename
 * then, once for the request                                               -> before_page_insert
 *   5. one transaction: lock the staged rows, batch, items, blobs, pages at revision 0,
 *      retire the rows, the caller's jobs.
 * Memory stays flat: a file's bytes go from the socket to disk; only its first 64 KiB are kept.
 * A refused request stores nothing: every staged row goes to the fenced deletion at once.
 */

export const INGEST_STEPS = [
  'after_staging',
  'after_temp_write',
  'after_rename',
  'before_page_insert',
] as const;
export type IngestStep = (typeof INGEST_STEPS)[number];

export interface IngestDeps {
  pool: Pool;
  blobStore: BlobStore;
  /** Base of canvas URIs (the configured `QUIRE_PUBLIC_URL`); default the laptop's. */
  publicBaseUrl?: string;
  limits?: Partial<IngestLimits>;
  /** Fallback when `settings.global_quota_bytes` is absent; null or absent: no global quota. */
  globalQuotaBytes?: number | null;
  /** How long a staged reservation holds before the cleanup may take it (default one hour). */
  reservationMs?: number;
  now?: () => Date;
  createJobs?: CreateJobs;
  /** I5: resolution PDF pages are rendered at (`QUIRE_PDF_DPI`, default 300). */
  pdfDpi?: number;
  /** Test seam: awaited at each step (crash injection). */
  onStep?: (step: IngestStep) => void | Promise<void>;
}

const HEAD_BYTES = 64 * 1024;

export async function ingestBatch(
  deps: IngestDeps,
  workspaceId: number,
  request: Request,
): Promise<BatchResult> {
  const limits: IngestLimits = { ...DEFAULT_INGEST_LIMITS, ...deps.limits };
  const now = deps.now ?? (() => new Date());
  const step = async (name: IngestStep) => {
    if (deps.onStep) await deps.onStep(name);
  };
  const contentType = request.headers.get('content-type') ?? '';
  if (!/^multipart\/form-data\b/i.test(contentType)) {
    throw new IngestError('invalid_content_type', 'the request must be multipart/form-data');
  }
  const declaredLength = Number(request.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declaredLength) && declaredLength > limits.maxRequestBytes) {
    throw new IngestError(
      'request_too_large',
      `the request is larger than ${limits.maxRequestBytes} bytes`,
    );
  }
  if (!request.body) throw new IngestError('no_files', 'the request carries no files');

  const fields = emptyFields(request);
  const stored: StoredFile[] = [];
  const staged: number[] = [];
  /** I5: the uploaded PDFs and multi-page TIFFs, whose pages were stored one by one. */
  const documentSources: number[] = [];
  let uploadedBytes = 0;
  let received = 0;

  const source = Readable.fromWeb(request.body as unknown as NodeWebReadableStream<Uint8Array>);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      limits: {
        // Each image may bring a transcript part (I3); images alone are counted against maxFiles.
        files: limits.maxFiles * 2,
        fields: 32,
        fieldSize: Math.max(limits.maxMetadataBytes, 1024),
        parts: limits.maxFiles * 2 + 32,
      },
    });
  } catch {
    throw new IngestError('invalid_request', 'the multipart body has no boundary');
  }

  let failure: unknown;
  let currentStream: Readable | undefined;
  let failed: (error: unknown) => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    failed = reject;
  });
  aborted.catch(() => {});
  const fail = (error: unknown) => {
    if (failure !== undefined) return;
    failure = error;
    source.unpipe(parser);
    // Never destroyed: that cancels the server's body stream under a client still sending (R6).
    discardRestOf(source);
    // The file being written ends with an error, so its temporary is removed and the chain settles.
    currentStream?.destroy();
    failed(error);
  };

  // Files are handled one at a time, in upload order; busboy moves on to the next part only
  // once the current file stream has been consumed, which is the backpressure we want.
  let chain: Promise<void> = Promise.resolve();
  let fileCount = 0;
  let replayChecked = false;

  source.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received > limits.maxRequestBytes) {
      fail(
        new IngestError(
          'request_too_large',
          `the request is larger than ${limits.maxRequestBytes} bytes`,
        ),
      );
    }
  });
  source.on('error', (error) => fail(error));

  parser.on('field', (name, value, info) => {
    try {
      if (info.valueTruncated) {
        throw new IngestError('field_too_large', `the field ${safeName(name)} is too large`);
      }
      applyField(fields, name, value, limits);
    } catch (error) {
      fail(error);
    }
  });
  parser.on('file', (name, stream, info) => {
    // A truncated body errors the part's stream, possibly before this part is consumed; the
    // error reaches the writer through its iterator or the parser's own 'error' event.
    stream.on('error', () => {});
    if (name === TRANSCRIPT_FIELD) {
      chain = chain.then(async () => {
        if (failure !== undefined) {
          stream.resume();
          return;
        }
        currentStream = stream;
        try {
          // Beside its image: the transcript belongs to the image stored just before it.
          const image = stored.at(-1);
          const transcript = await readTranscriptPart(stream, info.filename ?? null, image, limits);
          if (image) image.transcript = transcript;
        } catch (error) {
          stream.resume();
          fail(error);
        } finally {
          currentStream = undefined;
        }
      });
      return;
    }
    if (fileCount >= limits.maxFiles) {
      stream.resume();
      fail(new IngestError('too_many_files', `a request carries at most ${limits.maxFiles} files`));
      return;
    }
    const index = fileCount++;
    chain = chain.then(async () => {
      if (failure !== undefined) {
        stream.resume();
        return;
      }
      currentStream = stream;
      try {
        if (!FILE_FIELDS.has(name)) {
          throw new IngestError(
            'unexpected_field',
            `unexpected file field ${safeName(name)}; use files[]`,
          );
        }
        if (!replayChecked && fields.idempotencyKey) {
          replayChecked = true;
          // A retry stores nothing at all: found before its first byte is written.
          const earlier = await findBatchByIdempotencyKey(
            deps.pool,
            workspaceId,
            fields.idempotencyKey,
          );
          if (earlier) throw new Replay(earlier);
        }
        stored.push(...(await storeFile(index, stream, info.filename ?? null)));
      } catch (error) {
        stream.resume();
        fail(error);
      } finally {
        currentStream = undefined;
      }
    });
  });
  parser.on('filesLimit', () =>
    fail(new IngestError('too_many_files', `a request carries at most ${limits.maxFiles} files`)),
  );
  parser.on('partsLimit', () =>
    fail(new IngestError('too_many_parts', 'the request has too many parts')),
  );
  parser.on('fieldsLimit', () =>
    fail(new IngestError('too_many_fields', 'the request has too many fields')),
  );

  interface WrittenUpload {
    cleanupId: number;
    uploadId: string;
    temporaryKey: string;
    written: { sha256: string; size: number };
    bytes: ByteSource;
    limitedBy: Awaited<ReturnType<typeof stageBlobCleanup>>['limitedBy'];
  }

  /**
   * Steps 1-2 for one stream: a staged reservation, then the bytes to a temporary. `sniff`
   * refuses an unsupported upload from its first bytes; a page rendered from a document
   * (I5) is Quire's own output and is inspected once written.
   */
  async function writeUpload(
    index: number,
    stream: Readable,
    reservation: number,
    sniff: boolean,
  ): Promise<WrittenUpload> {
    const uploadId = newUploadId();
    const temporaryKey = temporaryKeyFor(workspaceId, uploadId);
    const { cleanupId, reservedBytes, limitedBy } = await stageBlobCleanup(deps.pool, {
      workspaceId,
      objectKey: temporaryKey,
      temporaryKey,
      sizeBytes: reservation,
      reserveUntil: new Date(now().getTime() + (deps.reservationMs ?? 60 * 60 * 1000)),
      globalQuotaBytes: deps.globalQuotaBytes ?? null,
      fitToQuota: true,
    });
    staged.push(cleanupId);
    await step('after_staging');

    const head = new Uint8Array(HEAD_BYTES);
    let headLength = 0;
    let sniffed = !sniff;
    let written: { sha256: string; size: number };
    try {
      written = await deps.blobStore.writeTemporary(temporaryKey, stream, {
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
    await step('after_temp_write');
    const bytes: ByteSource = {
      size: written.size,
      read: async (offset, length) =>
        offset + length <= headLength
          ? head.subarray(offset, offset + length)
          : deps.blobStore.readRange(temporaryKey, offset, length),
    };
    return { cleanupId, uploadId, temporaryKey, written, bytes, limitedBy };
  }

  /** Steps 3-4: the bytes inspected, the reservation settled, the object given its name. */
  async function settleUpload(
    index: number,
    upload: WrittenUpload,
    filename: string | null,
    inspected?: MediaInfo,
  ): Promise<StoredFile> {
    let info: MediaInfo;
    try {
      info = inspected ?? (await inspectMedia(upload.bytes, limits));
    } catch (error) {
      if (error instanceof MediaRejection) throw new IngestError(error.code, error.message, index);
      throw error;
    }
    const key = canonicalKeyFor(workspaceId, upload.written.sha256, upload.uploadId);
    await settleStagedCleanup(deps.pool, upload.cleanupId, {
      workspaceId,
      objectKey: key,
      sizeBytes: upload.written.size,
      globalQuotaBytes: deps.globalQuotaBytes ?? null,
    });
    await deps.blobStore.promote(upload.temporaryKey, key);
    await step('after_rename');
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

  async function storeFile(
    index: number,
    stream: Readable,
    filename: string | null,
  ): Promise<StoredFile[]> {
    // The exact size is unknown until the part ends; the reservation is the most this part can
    // be (the per-file limit, or what remains of a declared body) and is settled to the exact
    // size before the object gets its canonical name.
    // When the quotas leave less room than that, the reservation is the room left and the
    // write stops there with `quota_exceeded`: the reservation always covers every byte written.
    // (Bytes read from the socket run ahead of the parser, so only finished files are subtracted.)
    // (The pages of a PDF are not bytes of the request: only uploaded files count.)
    const remaining = Number.isFinite(declaredLength)
      ? Math.max(1, declaredLength - uploadedBytes)
      : Infinity;
    const upload = await writeUpload(index, stream, Math.min(limits.maxFileBytes, remaining), true);
    uploadedBytes += upload.written.size;
    const head = await upload.bytes.read(0, 16);
    if (isPdfHeader(head)) return storeDocumentPages(index, upload, filename, 'pdf');
    let info: MediaInfo;
    try {
      info = await inspectMedia(upload.bytes, limits);
    } catch (error) {
      if (error instanceof MediaRejection) throw new IngestError(error.code, error.message, index);
      throw error;
    }
    if (info.frames) return storeDocumentPages(index, upload, filename, 'tiff', info.frames.length);
    return [await settleUpload(index, upload, filename, info)];
  }

  /**
   * I5: a PDF's pages or a TIFF's frames, each stored as a page image of its own, in order.
   * The uploaded file itself is read from disk, then given to the fenced deletion once the
   * batch is written (`documentSources`): its pages are what the item keeps.
   */
  async function storeDocumentPages(
    index: number,
    upload: WrittenUpload,
    filename: string | null,
    format: 'pdf' | 'tiff',
    frames = 0,
  ): Promise<StoredFile[]> {
    documentSources.push(upload.cleanupId);
    // The pages of every document of the request are written in its one transaction: bounded.
    const room = Math.max(0, limits.maxPagesPerRequest - stored.length);
    if (format === 'tiff' && frames > room) {
      throw new IngestError(
        'too_many_pages',
        `a request makes at most ${limits.maxPagesPerRequest} pages`,
        index,
      );
    }
    const pages: StoredFile[] = [];
    const storePage: StorePage = async (image, page) => {
      const written = await writeUpload(index, image, limits.maxFileBytes, false);
      const file = await settleUpload(index, written, filename);
      if (file.info.kind !== 'image' || !file.info.width || !file.info.height) {
        throw new IngestError('malformed_media', 'a page is not an image', index);
      }
      file.page = page;
      pages.push(file);
      return { width: file.info.width, height: file.info.height };
    };
    const local = await localCopy(upload.temporaryKey);
    try {
      if (format === 'tiff') {
        await ingestTiffFrames(local.path, frames, storePage);
        return pages;
      }
      const document = await ingestPdf(
        local.path,
        { ...limits, maxPagesPerFile: Math.min(limits.maxPagesPerFile, room) },
        { dpi: deps.pdfDpi ?? 300 },
        storePage,
      );
      for (const entry of document.pages) {
        const file = pages.find((p) => p.page === entry.page);
        if (file && entry.textLayer) {
          file.transcript = {
            parsed: {
              format: 'pdf',
              namespace: 'application/pdf',
              producer: document.producer,
              width: file.info.width!,
              height: file.info.height!,
              segments: entry.textLayer,
            },
            sha256: upload.written.sha256,
            filename: filename ? filename.slice(0, 200) : null,
            page: entry.page,
          };
        }
      }
      return pages;
    } catch (error) {
      if (error instanceof MediaRejection) throw new IngestError(error.code, error.message, index);
      throw error;
    } finally {
      await local.release();
    }
  }

  /** A file path holding a temporary's bytes: the object itself on the local store, else a copy. */
  async function localCopy(
    temporaryKey: string,
  ): Promise<{ path: string; release: () => Promise<void> }> {
    if (deps.blobStore.kind === 'local') {
      return { path: await deps.blobStore.localPath(temporaryKey), release: async () => {} };
    }
    const dir = await mkdtemp(path.join(tmpdir(), 'quire-document-'));
    const file = path.join(dir, 'upload');
    await pipeline(deps.blobStore.read(temporaryKey), createWriteStream(file));
    return { path: file, release: () => rm(dir, { recursive: true, force: true }) };
  }

  try {
    const parsed = new Promise<void>((resolve, reject) => {
      parser.on('close', resolve);
      parser.on('error', reject);
    });
    source.pipe(parser);
    await Promise.race([parsed, aborted]);
    await Promise.race([chain, aborted]);
    if (failure !== undefined) throw failure;
    if (stored.length === 0) {
      if (fields.idempotencyKey) {
        const earlier = await findBatchByIdempotencyKey(
          deps.pool,
          workspaceId,
          fields.idempotencyKey,
        );
        if (earlier) return earlier;
      }
      throw new IngestError('no_files', 'the request carries no files in files[]');
    }
    if (fields.mode === 'perFile' && fields.itemId) {
      throw new IngestError(
        'invalid_field',
        'itemId names one item; it cannot be combined with mode=perFile',
      );
    }
    await step('before_page_insert');
    const result = await commitBatch(
      deps,
      workspaceId,
      fields,
      stored,
      deps.publicBaseUrl ?? DEFAULT_PUBLIC_URL,
    );
    // The documents' pages are written; the files they came from go to the fenced deletion.
    await discardStagedUploads(deps.pool, deps.blobStore, documentSources, now());
    return result;
  } catch (error) {
    source.unpipe(parser);
    discardRestOf(source);
    currentStream?.destroy();
    // Every file task has settled (its stream is ended), so `staged` is complete.
    await chain;
    const settled = error instanceof Replay ? error : failure instanceof Replay ? failure : error;
    // Nothing of a refused (or replayed) request stays: reservations go to the fenced deletion.
    await discardStagedUploads(deps.pool, deps.blobStore, staged, now());
    if (settled instanceof Replay) return settled.result;
    if (settled instanceof Error && /Unexpected end of form|Malformed/i.test(settled.message)) {
      throw new IngestError('malformed_multipart', 'the multipart body is malformed or truncated');
    }
    throw settled;
  }
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
