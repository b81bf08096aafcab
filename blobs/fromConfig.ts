import { resolve } from 'node:path';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import type { QuireConfig } from '../core/config';
import { createLocalBlobStore } from './local';
import { createS3BlobStore } from './s3';
import type { BlobStore } from './store';

/**
 * The blob store a process was configured with (U1, D2): the local directory, or the
 * S3-compatible bucket that every worker and web replica shares, so no process ever reads
 * another's disk.
 */
export function createBlobStore(config: QuireConfig): BlobStore {
  if (config.QUIRE_BLOB_STORE === 'local')
    return createLocalBlobStore(resolve(config.QUIRE_BLOB_DIR));
  return createS3BlobStore({
    // parseConfig refuses s3 without a bucket.
    bucket: config.QUIRE_S3_BUCKET ?? '',
    prefix: config.QUIRE_S3_PREFIX,
    cacheMaxBytes: config.QUIRE_BLOB_CACHE_MAX_MB * 1024 * 1024,
    clientConfig: s3ClientConfig(config),
  });
}

/** The S3 client's settings: where the store is, who we are, and how long a call may take. */
export function s3ClientConfig(config: QuireConfig): S3ClientConfig {
  const credentials =
    config.QUIRE_S3_ACCESS_KEY_ID && config.QUIRE_S3_SECRET_ACCESS_KEY
      ? {
          accessKeyId: config.QUIRE_S3_ACCESS_KEY_ID,
          secretAccessKey: config.QUIRE_S3_SECRET_ACCESS_KEY,
        }
      : undefined;
  return {
    region: config.QUIRE_S3_REGION,
    endpoint: config.QUIRE_S3_ENDPOINT,
    forcePathStyle: config.QUIRE_S3_FORCE_PATH_STYLE,
    credentials,
    // D7: an object store that stops answering fails the request within these bounds, as
    // an outage (a `TimeoutError`, BlobStoreUnavailableError), instead of holding the step.
    // The socket's bound is on silence, not on the whole request: a large upload that keeps
    // moving is never cut.
    requestHandler: {
      connectionTimeout: config.QUIRE_S3_CONNECT_TIMEOUT_MS,
      socketTimeout: config.QUIRE_S3_SOCKET_TIMEOUT_MS,
    },
  };
}

/**
 * D8: the settings every process of one installation must share, as recorded in PostgreSQL
 * by the first one (db/installationSettings.ts): the blob store's identity (its kind, and the
 * bucket, endpoint and prefix of an S3 store or the absolute root of a local one) and the
 * Temporal namespace. Credentials are not identity and are never recorded.
 */
export function fleetSettings(config: QuireConfig): Record<string, string> {
  const store: Record<string, string> =
    config.QUIRE_BLOB_STORE === 'local'
      ? { QUIRE_BLOB_STORE: 'local', QUIRE_BLOB_DIR: resolve(config.QUIRE_BLOB_DIR) }
      : {
          QUIRE_BLOB_STORE: 's3',
          QUIRE_S3_ENDPOINT: config.QUIRE_S3_ENDPOINT ?? '',
          QUIRE_S3_BUCKET: config.QUIRE_S3_BUCKET ?? '',
          QUIRE_S3_PREFIX: config.QUIRE_S3_PREFIX ?? '',
        };
  return { ...store, TEMPORAL_NAMESPACE: config.TEMPORAL_NAMESPACE };
}
