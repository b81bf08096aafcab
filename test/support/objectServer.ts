import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createS3BlobStore, type S3BlobStoreOptions } from '../../blobs/s3';
import {
  type ObjectServerSettings,
  objectServerEndpoint,
  objectServerProcess,
} from '../../scripts/lib/objectServer';
import type { ManagedProcess } from '../../scripts/lib/processes';
import { freePort } from '../../scripts/lib/temporal';

/** A real S3-compatible server (versitygw, built once into ~/.cache/quire) on a free port. */
export interface TestObjectServer {
  settings: ObjectServerSettings;
  process: ManagedProcess;
  store(options?: Partial<S3BlobStoreOptions>): ReturnType<typeof createS3BlobStore>;
  close(): Promise<void>;
}

export async function startTestObjectServer(): Promise<TestObjectServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'quire-objects-'));
  const settings: ObjectServerSettings = {
    port: await freePort(),
    dataDir: join(dataDir, 'data'),
    accessKeyId: `test${randomBytes(6).toString('hex')}`,
    secretAccessKey: randomBytes(20).toString('hex'),
    region: 'us-east-1',
    bucket: 'quire-test',
  };
  const process = objectServerProcess(settings, join(dataDir, 'object-server.log'), () => {});
  await process.start();
  return {
    settings,
    process,
    store: (options = {}) =>
      createS3BlobStore({
        bucket: settings.bucket,
        cacheDir: join(dataDir, 'cache'),
        clientConfig: {
          endpoint: objectServerEndpoint(settings),
          region: settings.region,
          forcePathStyle: true,
          credentials: {
            accessKeyId: settings.accessKeyId,
            secretAccessKey: settings.secretAccessKey,
          },
        },
        ...options,
      }),
    async close() {
      await process.stop(5_000);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
