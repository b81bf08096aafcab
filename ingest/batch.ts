import { Readable } from 'node:stream';
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web';
import busboy from 'busboy';
import {
  type BlobStore,
  BlobTooLargeError,
  canonicalKeyFor,
  newUploadId,
  temporaryKeyFor,
} from '../blobs/store';
import { uuidv7 } from '../core/ids';
import type { MediaKind } from '../core/media';
import {
  type ByteSource,
  checkImageLimits,
  DEFAULT_MEDIA_LIMITS,
  inspectMedia,
  type MediaInfo,
  type MediaLimits,
  MediaRejection,
  SNIFF_BYTES,
  sniffMediaType,
} from '../core/media';
import {
  insertBlob,
  lockBlobForReference,
  lockStagedCleanups,
  QuotaExceededError,
  ReservationLostError,
  retireBlobCleanup,
  settleStagedCleanup,
  stageBlobCleanup,
} from '../db/blobs';
import {
  type BatchResult,
  findBatchByIdempotencyKey,
  insertBatch,
  insertBatchPage,
  insertIngestedPage,
  prepareItem,
  recordBatchJobs,
} from '../db/ingest';
import { type Pool, type PoolClient, withTransaction } from '../db/pool';
import { discardStagedUploads } from './deletion';

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

export interface IngestLimits extends MediaLimits {
  maxFiles: number;
  /** Bytes of the whole request body. */
  maxRequestBytes: number;
  /** Bytes of the `metadata` JSON field. */
  maxMetadataBytes: number;
}

export const DEFAULT_INGEST_LIMITS: IngestLimits = {
  ...DEFAULT_MEDIA_LIMITS,
  maxFiles: 500,
  maxRequestBytes: 2 * 1024 * 1024 * 1024,
  maxMetadataBytes: 16 * 1024,
};

export interface IngestedPage {
  pageId: number;
  itemId: string;
  canvasUri: string;
  kind: MediaKind;
  mediaType: string;
  blobKey: string;
}

export interface IngestRequestFields {
  itemId: string | null;
  externalReferenceId: string | null;
  idempotencyKey: string | null;
  metadata: Record<string, unknown>;
  provider: string | null;
  mode: 'single' | 'perFile';
}

export interface IngestDeps {
  pool: Pool;
  blobStore: BlobStore;
  /** Base of canvas URIs; default `QUIRE_PUBLIC_URL` or http://localhost:3000. */
  publicBaseUrl?: string;
  limits?: Partial<IngestLimits>;
  /** Fallback when `settings.global_quota_bytes` is absent; null or absent: no global quota. */
  globalQuotaBytes?: number | null;
  /** How long a staged reservation holds before the cleanup may take it (default one hour). */
  reservationMs?: number;
  now?: () => Date;
  /**
   * Job creation belongs to the caller: called inside the commit transaction with the new
   * pages; the returned job ids are stored with the batch and returned.
   */
  createJobs?: (
    tx: PoolClient,
    pages: IngestedPage[],
    fields: IngestRequestFields,
    batchId: string,
  ) => Promise<Array<{ pageId: number; jobId: string }>>;
  /** Test seam: awaited at each step (crash injection). */
  onStep?: (step: IngestStep) => void | Promise<void>;
}

/** A refused request: stable `code`, HTTP `status`, a message that names no file content. */
export class IngestError extends Error {
  override name = 'IngestError';
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    /** Index of the file (in upload order) the error is about, when it is about one. */
    readonly fileIndex?: number,
  ) {
    super(message);
  }
}

/** Maps anything `ingestBatch` throws to the API's error shape; undefined for internal errors. */
export function ingestErrorResponse(
  error: unknown,
): { status: number; body: { error: { code: string; message: string } } } | undefined {
  if (
    error instanceof IngestError ||
    error instanceof MediaRejection ||
    error instanceof QuotaExceededError
  ) {
    return { status: error.status, body: { error: { code: error.code, message: error.message } } };
  }
  if (error instanceof ReservationLostError) {
    return { status: 503, body: { error: { code: error.code, message: error.message } } };
  }
  return undefined;
}

interface StoredFile {
  index: number;
  cleanupId: number;
  key: string;
  sha256: string;
  size: number;
  info: MediaInfo;
  filename: string | null;
}

const FILE_FIELDS = new Set(['files[]', 'files', 'file']);
const TEXT_FIELDS = new Set([
  'itemId',
  'externalReferenceId',
  'idempotencyKey',
  'metadata',
  'provider',
  'mode',
]);
const HEAD_BYTES = 64 * 1024;
const ID_PATTERN = /^[A-Za-z0-9._:~-]{1,200}$/;

/** Replaces an in-flight ingest with an earlier batch's result (same idempotency key). */
class Replay {
  constructor(readonly result: BatchResult) {}
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
  const contentType = request.headers.get('content-type') ?? '';
  if (!/^multipart\/form-data\b/i.test(contentType)) {
    throw new IngestError('invalid_content_type', 415, 'the request must be multipart/form-data');
  }
  const declaredLength = Number(request.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declaredLength) && declaredLength > limits.maxRequestBytes) {
    throw new IngestError(
      'request_too_large',
      413,
      `the request is larger than ${limits.maxRequestBytes} bytes`,
    );
  }
  if (!request.body) throw new IngestError('no_files', 400, 'the request carries no files');

  const fields: IngestRequestFields = {
    itemId: null,
    externalReferenceId: null,
    idempotencyKey: headerIdempotencyKey(request),
    metadata: {},
    provider: null,
    mode: 'single',
  };
  const stored: StoredFile[] = [];
  const staged: number[] = [];
  let received = 0;

  const source = Readable.fromWeb(request.body as unknown as NodeWebReadableStream<Uint8Array>);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      limits: {
        files: limits.maxFiles,
        fields: 32,
        fieldSize: Math.max(limits.maxMetadataBytes, 1024),
        parts: limits.maxFiles + 32,
      },
    });
  } catch {
    throw new IngestError('invalid_request', 400, 'the multipart body has no boundary');
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
    source.destroy();
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
          413,
          `the request is larger than ${limits.maxRequestBytes} bytes`,
        ),
      );
    }
  });
  source.on('error', (error) => fail(error));

  parser.on('field', (name, value, info) => {
    try {
      if (info.valueTruncated) {
        throw new IngestError('field_too_large', 413, `the field ${safeName(name)} is too large`);
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
            400,
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
        const file = await storeFile(index, stream, info.filename ?? null);
        stored.push(file);
      } catch (error) {
        stream.resume();
        fail(error);
      } finally {
        currentStream = undefined;
      }
    });
  });
  parser.on('filesLimit', () =>
    fail(
      new IngestError('too_many_files', 413, `a request carries at most ${limits.maxFiles} files`),
    ),
  );
  parser.on('partsLimit', () =>
    fail(new IngestError('too_many_parts', 413, 'the request has too many parts')),
  );
  parser.on('fieldsLimit', () =>
    fail(new IngestError('too_many_fields', 413, 'the request has too many fields')),
  );

  async function storeFile(
    index: number,
    stream: Readable,
    filename: string | null,
  ): Promise<StoredFile> {
    const uploadId = newUploadId();
    const temporaryKey = temporaryKeyFor(workspaceId, uploadId);
    // The exact size is unknown until the part ends; the reservation is the most this part can
    // be (the per-file limit, or what remains of a declared body) and is settled to the exact
    // size before the object gets its canonical name.
    // When the quotas leave less room than that, the reservation is the room left and the
    // write stops there with `quota_exceeded`: the reservation always covers every byte written.
    // (Bytes read from the socket run ahead of the parser, so only finished files are subtracted.)
    const priorFiles = stored.reduce((sum, f) => sum + f.size, 0);
    const remaining = Number.isFinite(declaredLength)
      ? Math.max(1, declaredLength - priorFiles)
      : Infinity;
    const reservation = Math.min(limits.maxFileBytes, remaining);
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
    let sniffed = false;
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
          413,
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
    let info: MediaInfo;
    try {
      info = await inspectMedia(bytes, limits);
    } catch (error) {
      if (error instanceof MediaRejection)
        throw new IngestError(error.code, error.status, error.message, index);
      throw error;
    }
    const key = canonicalKeyFor(workspaceId, written.sha256, uploadId);
    await settleStagedCleanup(deps.pool, cleanupId, {
      workspaceId,
      objectKey: key,
      sizeBytes: written.size,
      globalQuotaBytes: deps.globalQuotaBytes ?? null,
    });
    await deps.blobStore.promote(temporaryKey, key);
    await step('after_rename');
    return { index, cleanupId, key, sha256: written.sha256, size: written.size, info, filename };
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
      throw new IngestError('no_files', 400, 'the request carries no files in files[]');
    }
    if (fields.mode === 'perFile' && fields.itemId) {
      throw new IngestError(
        'invalid_field',
        422,
        'itemId names one item; it cannot be combined with mode=perFile',
      );
    }
    await step('before_page_insert');
    return await commitBatch(
      deps,
      workspaceId,
      fields,
      stored,
      deps.publicBaseUrl ?? publicBaseUrlFromEnv(),
    );
  } catch (error) {
    source.destroy();
    currentStream?.destroy();
    // Every file task has settled (its stream is ended), so `staged` is complete.
    await chain;
    const settled = error instanceof Replay ? error : failure instanceof Replay ? failure : error;
    // Nothing of a refused (or replayed) request stays: reservations go to the fenced deletion.
    await discardStagedUploads(deps.pool, deps.blobStore, staged, now());
    if (settled instanceof Replay) return settled.result;
    if (settled instanceof Error && /Unexpected end of form|Malformed/i.test(settled.message)) {
      throw new IngestError(
        'malformed_multipart',
        400,
        'the multipart body is malformed or truncated',
      );
    }
    throw settled;
  }
}

async function commitBatch(
  deps: IngestDeps,
  workspaceId: number,
  fields: IngestRequestFields,
  files: StoredFile[],
  publicBaseUrl: string,
): Promise<BatchResult> {
  try {
    return await withTransaction(deps.pool, async (tx) => {
      // First: no cleanup may take these reservations over while the pages are written.
      await lockStagedCleanups(
        tx,
        files.map((f) => f.cleanupId),
      );
      const batchId = uuidv7();
      const inserted = await insertBatch(tx, {
        id: batchId,
        workspaceId,
        idempotencyKey: fields.idempotencyKey,
      });
      if (!inserted) {
        // A concurrent request with the same key committed first: roll back, return its result.
        throw new Replay(await loadLatestResult(tx, workspaceId, fields.idempotencyKey!));
      }
      const pages: IngestedPage[] = [];
      let singleItem: { id: string; next: number } | undefined;
      for (const [ordinal, file] of files.entries()) {
        let itemId: string;
        let position: number;
        if (fields.mode === 'single') {
          if (!singleItem) {
            const id = fields.itemId ?? uuidv7();
            singleItem = {
              id,
              next: await prepareItem(tx, workspaceId, id, itemFields(fields, null)),
            };
          }
          itemId = singleItem.id;
          position = singleItem.next++;
        } else {
          itemId = uuidv7();
          position = await prepareItem(tx, workspaceId, itemId, itemFields(fields, file.filename));
        }
        await insertBlob(tx, {
          key: file.key,
          workspaceId,
          sha256hex: file.sha256,
          sizeBytes: file.size,
          mediaType: file.info.mediaType,
        });
        // U3: the same check every reference creator makes, in the page's own transaction.
        await lockBlobForReference(tx, workspaceId, file.key);
        const page = await insertIngestedPage(
          tx,
          {
            workspaceId,
            itemId,
            position,
            kind: file.info.kind,
            blobKey: file.key,
            mediaType: file.info.mediaType,
            width: file.info.width ?? null,
            height: file.info.height ?? null,
            durationMs: file.info.durationMs ?? null,
          },
          publicBaseUrl,
        );
        await retireBlobCleanup(tx, file.cleanupId);
        await insertBatchPage(tx, { batchId, ordinal, pageId: page.pageId });
        pages.push({
          ...page,
          itemId,
          kind: file.info.kind,
          mediaType: file.info.mediaType,
          blobKey: file.key,
        });
      }
      const jobs = deps.createJobs ? await deps.createJobs(tx, pages, fields, batchId) : [];
      await recordBatchJobs(tx, batchId, jobs);
      const jobOf = new Map(jobs.map((j) => [j.pageId, j.jobId]));
      return {
        batchId,
        pages: pages.map((p) => {
          const jobId = jobOf.get(p.pageId);
          return {
            pageId: p.pageId,
            itemId: p.itemId,
            canvasUri: p.canvasUri,
            ...(jobId ? { jobId } : {}),
          };
        }),
      };
    });
  } catch (error) {
    if ((error as { code?: string }).code === '23505' && fields.idempotencyKey) {
      // The idempotency key's unique index decided the race after our insert started waiting.
      const earlier = await findBatchByIdempotencyKey(
        deps.pool,
        workspaceId,
        fields.idempotencyKey,
      );
      if (earlier) throw new Replay(earlier);
    }
    throw error;
  }
}

async function loadLatestResult(
  tx: PoolClient,
  workspaceId: number,
  idempotencyKey: string,
): Promise<BatchResult> {
  const found = await findBatchByIdempotencyKey(tx, workspaceId, idempotencyKey);
  if (!found) throw new Error('idempotency conflict without a batch');
  return found;
}

function itemFields(fields: IngestRequestFields, filename: string | null) {
  return {
    title: filename ? filename.slice(0, 200) : null,
    externalReferenceId: fields.externalReferenceId,
    metadata: fields.metadata,
  };
}

function earlyChecks(head: Uint8Array, limits: MediaLimits): void {
  const type = sniffMediaType(head.subarray(0, Math.max(SNIFF_BYTES, head.length)));
  if (!type) {
    throw new MediaRejection(
      'unsupported_media_type',
      'the file is not a PNG, JPEG, TIFF, WebP, WAV, FLAC, MP3, OGG or M4A file',
    );
  }
  const v = new DataView(head.buffer, head.byteOffset, head.byteLength);
  if (type === 'image/png' && head.length >= 24)
    checkImageLimits(v.getUint32(16), v.getUint32(20), limits);
}

function applyField(
  fields: IngestRequestFields,
  name: string,
  value: string,
  limits: IngestLimits,
): void {
  if (!TEXT_FIELDS.has(name)) {
    throw new IngestError('unexpected_field', 400, `unexpected field ${safeName(name)}`);
  }
  switch (name) {
    case 'itemId':
    case 'idempotencyKey':
      if (!ID_PATTERN.test(value)) {
        throw new IngestError(
          'invalid_field',
          422,
          `${name} must be 1-200 letters, digits or . _ : ~ -`,
        );
      }
      fields[name] = value;
      return;
    case 'externalReferenceId':
      if (value.length < 1 || value.length > 200) {
        throw new IngestError('invalid_field', 422, 'externalReferenceId must be 1-200 characters');
      }
      fields.externalReferenceId = value;
      return;
    case 'provider':
      if (!/^[a-z0-9_-]{1,64}$/.test(value))
        throw new IngestError('invalid_field', 422, 'provider is not a name');
      fields.provider = value;
      return;
    case 'mode':
      if (value !== 'single' && value !== 'perFile') {
        throw new IngestError(
          'invalid_field',
          422,
          'mode must be single (one item) or perFile (one item per file)',
        );
      }
      fields.mode = value;
      return;
    case 'metadata': {
      if (Buffer.byteLength(value) > limits.maxMetadataBytes) {
        throw new IngestError(
          'metadata_too_large',
          413,
          `metadata is larger than ${limits.maxMetadataBytes} bytes`,
        );
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        throw new IngestError('invalid_metadata', 422, 'metadata must be a JSON object');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new IngestError('invalid_metadata', 422, 'metadata must be a JSON object');
      }
      fields.metadata = parsed as Record<string, unknown>;
      return;
    }
  }
}

function headerIdempotencyKey(request: Request): string | null {
  const value = request.headers.get('idempotency-key');
  if (value === null) return null;
  if (!ID_PATTERN.test(value)) {
    throw new IngestError(
      'invalid_field',
      422,
      'Idempotency-Key must be 1-200 letters, digits or . _ : ~ -',
    );
  }
  return value;
}

/** Field names are echoed in errors only when they look like names, never as raw input. */
function safeName(name: string): string {
  return /^[A-Za-z0-9_[\]-]{1,40}$/.test(name) ? name : '(unnamed)';
}

export function publicBaseUrlFromEnv(): string {
  return process.env.QUIRE_PUBLIC_URL || 'http://localhost:3000';
}
