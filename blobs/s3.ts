import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { createFileCache } from './fileCache';
import {
  assertValidKey,
  type BlobStore,
  BlobStoreUnavailableError,
  BlobTooLargeError,
  type ListOptions,
  STALE_TEMPORARY_AGE_MS,
  type StoredObject,
  TEMPORARY_PREFIX,
  type WriteOptions,
} from './store';

/** The replica cache's default bound: 2 GiB (QUIRE_BLOB_CACHE_MAX_MB sets it). */
export const DEFAULT_CACHE_MAX_BYTES = 2048 * 1024 * 1024;

/**
 * An S3-compatible blob store behind the same interface, shared by every worker and web
 * replica of a fleet (D2); tested against a real object server (test/cluster/s3Store.test.ts).
 * Differences from the local store: S3 has no rename, so `promote` is copy-then-delete (the
 * canonical key still only ever names a complete object: the copy is atomic per object);
 * a multipart upload is durable once `Upload.done()` resolves, and memory stays flat at about
 * `partSize * queueSize` whatever the file's size.
 */
export interface S3BlobStoreOptions {
  bucket: string;
  /** Key prefix inside the bucket, e.g. `quire/`. */
  prefix?: string;
  client?: S3Client;
  clientConfig?: S3ClientConfig;
  /** Where `localPath` downloads objects for engines that need a file. */
  cacheDir?: string;
  /** D13: the bytes those copies may take; the least recently used go beyond it. */
  cacheMaxBytes?: number;
  /** Multipart part size (bytes, at least 5 MiB) and parts in flight; memory is about their product. */
  partSize?: number;
  queueSize?: number;
}

/**
 * D7: the bounds of a store's calls when its client is not configured with its own
 * (QUIRE_S3_CONNECT_TIMEOUT_MS and QUIRE_S3_SOCKET_TIMEOUT_MS set them for a process): opening
 * a connection, and a socket silent this long, whether the request waits for its answer or a
 * body is being streamed. A transfer that keeps moving is never cut.
 */
export const DEFAULT_CALL_BOUNDS = { connectionTimeout: 10_000, socketTimeout: 30_000 };

/** Network failures and server errors: the store is down or overloaded, not refusing. */
function isUnavailable(error: unknown): boolean {
  const e = error as {
    code?: string;
    name?: string;
    $metadata?: { httpStatusCode?: number };
    cause?: unknown;
  };
  if (!e || typeof e !== 'object') return false;
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  if (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND'].includes(
      e.code ?? '',
    ) ||
    ['TimeoutError', 'RequestTimeout', 'AbortError'].includes(e.name ?? '') ||
    /socket hang up|ECONNREFUSED|ECONNRESET/.test(String((error as Error).message))
  ) {
    return true;
  }
  return e.cause !== undefined && e.cause !== error && isUnavailable(e.cause);
}

/** Every failure leaves as the store's own: unavailable (retry later) or as it was. */
function classified(error: unknown): unknown {
  if (error instanceof BlobTooLargeError || error instanceof BlobStoreUnavailableError)
    return error;
  return isUnavailable(error) ? new BlobStoreUnavailableError() : error;
}

export function createS3BlobStore(options: S3BlobStoreOptions): BlobStore {
  const sdk =
    options.client ??
    new S3Client({
      maxAttempts: 3,
      ...options.clientConfig,
      // D7: a store that stops answering fails every call within a bound, as an outage.
      requestHandler: options.clientConfig?.requestHandler ?? DEFAULT_CALL_BOUNDS,
    });
  const client = {
    // biome-ignore lint/suspicious/noExplicitAny: forwards any command with its own output type
    send: async (command: any): Promise<any> => {
      try {
        return await sdk.send(command);
      } catch (error) {
        throw classified(error);
      }
    },
  };
  const bucket = options.bucket;
  const prefix = options.prefix ?? '';
  const copies = createFileCache({
    dir: options.cacheDir ?? join(tmpdir(), 'quire-blob-cache'),
    maxBytes: options.cacheMaxBytes ?? DEFAULT_CACHE_MAX_BYTES,
  });
  const full = (key: string) => {
    assertValidKey(key);
    return `${prefix}${key}`;
  };
  const isMissing = (error: unknown) => {
    const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
    return (
      e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404
    );
  };

  async function* listAll(
    after?: string,
  ): AsyncIterable<{ key: string; size: number; modifiedAt: Date }> {
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: prefix,
          ContinuationToken: token,
          // S3 lists keys in UTF-8 byte order, the order a sweep resumes in.
          StartAfter: token || !after ? undefined : `${prefix}${after}`,
        }),
      );
      for (const object of page.Contents ?? []) {
        if (!object.Key) continue;
        yield {
          key: object.Key.slice(prefix.length),
          size: object.Size ?? 0,
          modifiedAt: object.LastModified ?? new Date(0),
        };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  const store: BlobStore = {
    kind: 's3',

    async writeTemporary(temporaryKey, source, opts: WriteOptions = {}) {
      const body = new PassThrough();
      const upload = new Upload({
        client: sdk,
        params: { Bucket: bucket, Key: full(temporaryKey), Body: body },
        partSize: options.partSize ?? 8 * 1024 * 1024,
        queueSize: options.queueSize ?? 2,
        // An aborted upload leaves no parts behind to be billed or swept.
        leavePartsOnError: false,
      });
      const done = upload.done();
      const hash = createHash('sha256');
      let size = 0;
      try {
        for await (const chunk of source) {
          size += chunk.length;
          if (opts.maxBytes !== undefined && size > opts.maxBytes)
            throw new BlobTooLargeError(opts.maxBytes);
          if (opts.onChunk) await opts.onChunk(chunk, size);
          hash.update(chunk);
          if (!body.write(chunk)) await new Promise((resolve) => body.once('drain', resolve));
        }
        body.end();
        await done;
      } catch (error) {
        body.destroy();
        await upload.abort().catch(() => {});
        await done.catch(() => {});
        await store.delete(temporaryKey).catch(() => {});
        throw classified(error);
      }
      return { sha256: hash.digest('hex'), size };
    },

    async promote(temporaryKey, key) {
      await client.send(
        new CopyObjectCommand({
          Bucket: bucket,
          Key: full(key),
          CopySource: `${bucket}/${encodeURIComponent(full(temporaryKey)).replace(/%2F/g, '/')}`,
        }),
      );
      await store.delete(temporaryKey);
    },

    async readRange(key, offset, length) {
      if (length <= 0) return new Uint8Array();
      try {
        const out = await client.send(
          new GetObjectCommand({
            Bucket: bucket,
            Key: full(key),
            Range: `bytes=${offset}-${offset + length - 1}`,
          }),
        );
        return (await out.Body?.transformToByteArray()) ?? new Uint8Array();
      } catch (error) {
        // A range past the end is a 416: nothing there.
        if (
          (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 416
        ) {
          return new Uint8Array();
        }
        // D7: a body cut off or gone silent is an outage too, not the object's fault.
        throw classified(error);
      }
    },

    read(key, range) {
      const stream = new PassThrough();
      client
        .send(
          new GetObjectCommand({
            Bucket: bucket,
            Key: full(key),
            Range: range ? `bytes=${range.start}-${range.end}` : undefined,
          }),
        )
        .then((out) => {
          // D7: a body that breaks or goes silent past its bound mid-stream fails the reader
          // as an outage (classified), so that it waits and tries again instead of charging
          // the job; a reader that stops early lets the body go.
          const body = out.Body as Readable;
          body.once('error', (error) => stream.destroy(classified(error) as Error));
          stream.once('close', () => body.destroy());
          body.pipe(stream);
        })
        .catch((error) => stream.destroy(classified(error) as Error));
      return stream;
    },

    async exists(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: bucket, Key: full(key) }));
        return true;
      } catch (error) {
        if (isMissing(error)) return false;
        throw error;
      }
    },

    async delete(key) {
      // S3 DeleteObject succeeds for a missing key, which is the idempotence U3 needs.
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: full(key) }));
    },

    async localPath(key) {
      return copies.pathOf(key, () => store.read(key));
    },

    async *list(options: ListOptions = {}): AsyncIterable<StoredObject> {
      for await (const object of listAll(options.after)) {
        const name = object.key.slice(object.key.lastIndexOf('/') + 1);
        const temporary = name.startsWith(TEMPORARY_PREFIX);
        if (!temporary) yield object;
        else if (options.temporaries) yield { ...object, temporary };
      }
    },

    async sweepStaleTemporaries(maxAgeMs = STALE_TEMPORARY_AGE_MS, now = new Date()) {
      let removed = 0;
      for await (const object of listAll()) {
        const name = object.key.slice(object.key.lastIndexOf('/') + 1);
        if (!name.startsWith(TEMPORARY_PREFIX)) continue;
        if (now.getTime() - object.modifiedAt.getTime() <= maxAgeMs) continue;
        await store.delete(object.key);
        removed++;
      }
      return { removed };
    },
  };
  return store;
}
