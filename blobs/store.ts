import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DomainError } from '../core/errors';

/**
 * The blob store (SPEC §2, U1): where uploaded bytes live. A local directory by default; an
 * S3-compatible bucket behind the same interface. Bytes are always written under a
 * `.quire-upload-*` temporary name first and only get their canonical key once complete and
 * durable, so a canonical key never names a partial object.
 */
export interface WrittenTemporary {
  /** Lowercase hex SHA-256 of the bytes written. */
  sha256: string;
  size: number;
}

export interface WriteOptions {
  /** Stop and fail with `BlobTooLargeError` once more than this many bytes arrive. */
  maxBytes?: number;
  /** Sees every chunk before it is written (validation by magic bytes, progress). May throw. */
  onChunk?: (chunk: Uint8Array, written: number) => void | Promise<void>;
}

export interface StoredObject {
  key: string;
  size: number;
  modifiedAt: Date;
  /** A `.quire-upload-*` temporary (listed only when asked for). */
  temporary?: boolean;
}

export interface ListOptions {
  /** Only keys after this one, in byte order. */
  after?: string;
  /** Temporaries listed too. */
  temporaries?: boolean;
}

export interface BlobStore {
  readonly kind: 'local' | 's3';
  /** Streams `source` to a temporary key, hashing as it goes; durable (fsync) when it resolves. */
  writeTemporary(
    temporaryKey: string,
    source: AsyncIterable<Uint8Array>,
    options?: WriteOptions,
  ): Promise<WrittenTemporary>;
  /** Gives a complete temporary its canonical key (atomic rename on the local store). */
  promote(temporaryKey: string, key: string): Promise<void>;
  /** Up to `length` bytes from `offset`; fewer at the end of the object. */
  readRange(key: string, offset: number, length: number): Promise<Uint8Array>;
  /**
   * Streams the object, or only the inclusive byte range `start..end` of it: bytes are read as
   * the consumer takes them, never the whole object into memory.
   */
  read(key: string, range?: { start: number; end: number }): Readable;
  exists(key: string): Promise<boolean>;
  /** Idempotent: deleting a missing key succeeds. */
  delete(key: string): Promise<void>;
  /** A file path with the object's bytes, for engines that need a file. */
  localPath(key: string): Promise<string>;
  /**
   * Canonical objects in key order (temporaries too when asked, marked), for the orphan
   * sweep; after `after` only, so a sweep can work through the store in slices (D13).
   */
  list(options?: ListOptions): AsyncIterable<StoredObject>;
  /**
   * Removes temporaries of Quire's own prefix older than `maxAgeMs` (default one hour):
   * never recent ones, links, directories or canonical names (U1).
   */
  sweepStaleTemporaries(maxAgeMs?: number, now?: Date): Promise<{ removed: number }>;
}

export const TEMPORARY_PREFIX = '.quire-upload-';
export const STALE_TEMPORARY_AGE_MS = 60 * 60 * 1000;

export class BlobTooLargeError extends Error {
  override name = 'BlobTooLargeError';
  readonly code = 'file_too_large';
  constructor(readonly maxBytes: number) {
    super(`the file is larger than ${maxBytes} bytes`);
  }
}

/**
 * The object store did not answer (refused, reset, timed out, 5xx): nothing was decided and the
 * same call may succeed later. A domain refusal of kind `unavailable`, so an upload that meets
 * it ends in a 503 with this stable code, and a cleanup records the code and retries (U3).
 */
export class BlobStoreUnavailableError extends DomainError {
  override name = 'BlobStoreUnavailableError';
  constructor() {
    super('blob_store_unavailable', 'the object store is unavailable; try again');
  }
}

export class InvalidBlobKeyError extends Error {
  override name = 'InvalidBlobKeyError';
  readonly code = 'invalid_blob_key';
}

/** A fresh random upload id; it ends up in both the temporary and the canonical key. */
export function newUploadId(): string {
  return randomUUID();
}

/** `ws/<workspaceId>/.quire-upload-<uploadId>`: in the same directory as the canonical key. */
export function temporaryKeyFor(workspaceId: number, uploadId: string): string {
  return `ws/${workspaceId}/${TEMPORARY_PREFIX}${uploadId}`;
}

/**
 * U1: `ws/<workspaceId>/<sha256hex>-<uploadId>`. The random part means identical bytes never
 * reuse an object that an older cleanup may be deleting.
 */
export function canonicalKeyFor(workspaceId: number, sha256hex: string, uploadId: string): string {
  return `ws/${workspaceId}/${sha256hex}-${uploadId}`;
}

export function isTemporaryKey(key: string): boolean {
  const name = key.slice(key.lastIndexOf('/') + 1);
  return name.startsWith(TEMPORARY_PREFIX);
}

const SEGMENT = /^[A-Za-z0-9._-]+$/;

/** Keys are relative, slash-separated, with no empty, `.` or `..` segment. */
export function assertValidKey(key: string): void {
  const segments = key.split('/');
  if (
    key.length === 0 ||
    key.length > 512 ||
    segments.some((s) => s === '' || s === '.' || s === '..' || !SEGMENT.test(s))
  ) {
    throw new InvalidBlobKeyError('invalid blob key');
  }
}

/** Normalises Web streams, Node streams and iterables of chunks into byte chunks. */
export async function* chunksOf(
  source: AsyncIterable<Uint8Array | string>,
): AsyncIterable<Uint8Array> {
  for await (const chunk of source) {
    yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
  }
}

/**
 * D8: the store answered that the object is not there (a local path that does not exist, an
 * S3 `NoSuchKey` or 404), as opposed to not answering at all.
 */
export function isMissingObject(error: unknown): boolean {
  const e = error as { code?: string; name?: string; $metadata?: { httpStatusCode?: number } };
  if (!e || typeof e !== 'object') return false;
  return (
    e.code === 'ENOENT' ||
    e.name === 'NoSuchKey' ||
    e.name === 'NotFound' ||
    e.$metadata?.httpStatusCode === 404
  );
}
