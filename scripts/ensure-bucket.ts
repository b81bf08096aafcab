import { CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { loadConfig } from '../core/config';

/**
 * Creates the bucket of QUIRE_BLOB_STORE=s3 when it is missing (docker-compose.yml's
 * `object-store-setup`; cluster mode does the same at start). Waits up to a minute for the
 * object server to answer. Safe to run again.
 */
const config = loadConfig();
if (config.QUIRE_BLOB_STORE !== 's3' || !config.QUIRE_S3_BUCKET) {
  process.stdout.write('QUIRE_BLOB_STORE is not s3: nothing to do\n');
  process.exit(0);
}
const client = new S3Client({
  endpoint: config.QUIRE_S3_ENDPOINT,
  region: config.QUIRE_S3_REGION,
  forcePathStyle: config.QUIRE_S3_FORCE_PATH_STYLE,
  credentials:
    config.QUIRE_S3_ACCESS_KEY_ID && config.QUIRE_S3_SECRET_ACCESS_KEY
      ? {
          accessKeyId: config.QUIRE_S3_ACCESS_KEY_ID,
          secretAccessKey: config.QUIRE_S3_SECRET_ACCESS_KEY,
        }
      : undefined,
});
const bucket = config.QUIRE_S3_BUCKET;
const deadline = Date.now() + 60_000;
for (;;) {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }));
    process.stdout.write(`bucket ${bucket} exists\n`);
    break;
  } catch (error) {
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 404) {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      process.stdout.write(`bucket ${bucket} created\n`);
      break;
    }
    if (Date.now() > deadline) throw error;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
client.destroy();
