import { Readable } from 'node:stream';
import type { BlobStore } from '../blobs/store';
import { DEFAULT_PUBLIC_URL } from '../core/config';
import { isPdfHeader } from '../core/media';
import { readDescriptionSheet } from '../core/metadataCsv';
import { type BatchResult, type FileOutcome, findBatchByIdempotencyKey } from '../db/ingest';
import type { Pool } from '../db/pool';
import { type CreateJobs, commitBatch, Replay, type StoredFile } from './commit';
import { discardStagedUploads } from './deletion';
import { storeDocumentPages } from './documentPages';
import { openIngestRequest } from './multipart';
import { DEFAULT_INGEST_LIMITS, IngestError, type IngestLimits } from './request';
import { readTranscriptPart } from './transcripts';
import { type BatchUploads, fileRefusal, inspectUpload, settleUpload, writeUpload } from './upload';

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
 * A refused request stores nothing: every staged row goes to the fenced deletion at once. In a
 * batch of several files a file refused for itself (its type, size, pixels, pages, quota) is
 * refused alone (I9): what it staged goes to the fenced deletion, the others are stored, and
 * the answer lists each file's outcome.
 * The parts: reading the request (multipart.ts), storing a stream (upload.ts), expanding a
 * PDF or a multi-page TIFF into its pages (documentPages.ts), the commit (commit.ts).
 */

export const INGEST_STEPS = [
  'after_staging',
  'after_temp_write',
  'after_rename',
  'before_page_insert',
] as const;
export type IngestStep = (typeof INGEST_STEPS)[number];

/**
 * I9: refusals about the whole request, not one file; any other refusal naming a file refuses
 * that file alone, and the others of the batch are stored.
 */
const REQUEST_REFUSALS = new Set<string>(['request_too_large', 'malformed_multipart']);

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
  const ingest = openIngestRequest(request, limits);
  const { fields } = ingest;
  const uploads: BatchUploads = {
    pool: deps.pool,
    blobStore: deps.blobStore,
    workspaceId,
    limits,
    now,
    globalQuotaBytes: deps.globalQuotaBytes ?? null,
    reservationMs: deps.reservationMs ?? 60 * 60 * 1000,
    pdfDpi: deps.pdfDpi ?? 300,
    step,
    declaredLength: ingest.declaredLength,
    uploadedBytes: 0,
    stored: [],
    staged: [],
    documentSources: [],
  };
  const { stored } = uploads;
  let replayChecked = false;
  const refused: FileOutcome[] = [];
  let firstRefusal: IngestError | undefined;
  let lastRefused = false;
  const refusedAlone = (error: unknown, index: number): IngestError | undefined => {
    const refusal = fileRefusal(error, index);
    if (!(refusal instanceof IngestError) || refusal.fileIndex !== index) return undefined;
    if (REQUEST_REFUSALS.has(refusal.code)) return undefined;
    firstRefusal ??= refusal;
    return refusal;
  };

  try {
    await ingest.read({
      file: async (index, stream, filename) => {
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
        const mark = { staged: uploads.staged.length, sources: uploads.documentSources.length };
        // The part is read through a stream of its own: a writer that stops early (a file too
        // large) ends that one, and the parser's part is still there to drain (I9).
        const part = Readable.from(stream.iterator({ destroyOnReturn: false }));
        try {
          stored.push(...(await storePart(uploads, index, part, filename)));
          lastRefused = false;
        } catch (error) {
          const alone = refusedAlone(error, index);
          if (!alone) throw error;
          // I9: this file is refused alone. The rest of its part is read and thrown away, what
          // it staged goes to the fenced deletion now, and the request reads on.
          stream.resume();
          uploads.documentSources.splice(mark.sources);
          const own = uploads.staged.splice(mark.staged);
          await discardStagedUploads(deps.pool, deps.blobStore, own, now());
          refused.push({
            index,
            filename: filename ? filename.slice(0, 200) : null,
            status: 'refused',
            error: { code: alone.code, message: alone.message },
          });
          lastRefused = true;
        }
      },
      transcript: async (stream, filename) => {
        // A transcript beside a refused file goes with it.
        if (lastRefused) {
          stream.resume();
          return;
        }
        // Beside its image: the transcript belongs to the image stored just before it.
        const image = stored.at(-1);
        const transcript = await readTranscriptPart(stream, filename, image, limits);
        if (image) image.transcript = transcript;
      },
    });
    // I9: when every file was refused, so is the request, with the first file's refusal.
    if (stored.length === 0 && firstRefusal) throw firstRefusal;
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
    // F5: the sheet is read once every file's name is known, before anything is committed:
    // a bad row refuses the whole request.
    const sheet =
      fields.descriptions === null
        ? undefined
        : readDescriptionSheet(
            fields.descriptions,
            stored.flatMap((f) => (f.filename ? [f.filename] : [])),
          );
    await step('before_page_insert');
    const result = await commitBatch(
      deps,
      workspaceId,
      fields,
      stored,
      deps.publicBaseUrl ?? DEFAULT_PUBLIC_URL,
      refused,
      sheet,
    );
    // The documents' pages are written; the files they came from go to the fenced deletion.
    await discardStagedUploads(deps.pool, deps.blobStore, uploads.documentSources, now());
    return result;
  } catch (error) {
    // Once every part has settled, `staged` is complete.
    const failure = await ingest.abandon();
    const settled = error instanceof Replay ? error : failure instanceof Replay ? failure : error;
    // Nothing of a refused (or replayed) request stays: reservations go to the fenced deletion.
    await discardStagedUploads(deps.pool, deps.blobStore, uploads.staged, now());
    if (settled instanceof Replay) return settled.result;
    if (settled instanceof Error && /Unexpected end of form|Malformed/i.test(settled.message)) {
      throw new IngestError('malformed_multipart', 'the multipart body is malformed or truncated');
    }
    throw settled;
  }
}

/**
 * One uploaded file: written, then a PDF or a multi-page TIFF expanded into its pages (I5),
 * anything else inspected and stored as it is.
 */
async function storePart(
  uploads: BatchUploads,
  index: number,
  stream: Readable,
  filename: string | null,
): Promise<StoredFile[]> {
  const { limits, declaredLength } = uploads;
  // The exact size is unknown until the part ends; the reservation is the most this part can
  // be (the per-file limit, or what remains of a declared body) and is settled to the exact
  // size before the object gets its canonical name.
  // When the quotas leave less room than that, the reservation is the room left and the
  // write stops there with `quota_exceeded`: the reservation always covers every byte written.
  // (Bytes read from the socket run ahead of the parser, so only finished files are subtracted.)
  // (The pages of a PDF are not bytes of the request: only uploaded files count.)
  const remaining = Number.isFinite(declaredLength)
    ? Math.max(1, declaredLength - uploads.uploadedBytes)
    : Infinity;
  const upload = await writeUpload(
    uploads,
    index,
    stream,
    Math.min(limits.maxFileBytes, remaining),
    true,
  );
  uploads.uploadedBytes += upload.written.size;
  const head = await upload.bytes.read(0, 16);
  if (isPdfHeader(head)) return storeDocumentPages(uploads, index, upload, filename, 'pdf');
  const info = await inspectUpload(uploads, index, upload);
  if (info.frames) {
    return storeDocumentPages(uploads, index, upload, filename, 'tiff', info.frames.length);
  }
  return [await settleUpload(uploads, index, upload, filename, info)];
}
