import { resolve } from 'node:path';
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
  const credentials =
    config.QUIRE_S3_ACCESS_KEY_ID && config.QUIRE_S3_SECRET_ACCESS_KEY
      ? {
          accessKeyId: config.QUIRE_S3_ACCESS_KEY_ID,
          secretAccessKey: config.QUIRE_S3_SECRET_ACCESS_KEY,
        }
      : undefined;
  return createS3BlobStore({
    // parseConfig refuses s3 without a bucket.
    bucket: config.QUIRE_S3_BUCKET ?? '',
    prefix: config.QUIRE_S3_PREFIX,
    clientConfig: {
      region: config.QUIRE_S3_REGION,
      endpoint: config.QUIRE_S3_ENDPOINT,
      forcePathStyle: config.QUIRE_S3_FORCE_PATH_STYLE,
      credentials,
    },
  });
}
