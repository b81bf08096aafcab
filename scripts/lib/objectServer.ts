import { mkdirSync } from 'node:fs';
import { CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { findOrBuild } from './goBuilds';
import { type ManagedProcess, managedProcess, pollReady } from './processes';

/**
 * The S3-compatible object server of cluster mode (D2): versitygw built from the Go module
 * proxy, serving a directory of this machine over the loopback. Every worker and web replica
 * reaches blobs only through it (QUIRE_BLOB_STORE=s3), never through another's disk.
 */
export interface ObjectServerSettings {
  port: number;
  dataDir: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  bucket: string;
}

export function objectServerEndpoint(settings: ObjectServerSettings): string {
  return `http://127.0.0.1:${settings.port}`;
}

export function s3ClientFor(settings: ObjectServerSettings): S3Client {
  return new S3Client({
    endpoint: objectServerEndpoint(settings),
    region: settings.region,
    forcePathStyle: true,
    credentials: {
      accessKeyId: settings.accessKeyId,
      secretAccessKey: settings.secretAccessKey,
    },
    maxAttempts: 1,
  });
}

export function objectServerProcess(
  settings: ObjectServerSettings,
  logFile: string,
  log: (line: string) => void,
): ManagedProcess {
  const { versitygw } = findOrBuild('objectServer', log);
  mkdirSync(settings.dataDir, { recursive: true });
  return managedProcess({
    name: 'object-store',
    command: versitygw as string,
    args: ['posix', settings.dataDir],
    env: {
      PATH: process.env.PATH,
      ROOT_ACCESS_KEY_ID: settings.accessKeyId,
      ROOT_SECRET_ACCESS_KEY: settings.secretAccessKey,
      VGW_PORT: `127.0.0.1:${settings.port}`,
      VGW_REGION: settings.region,
      VGW_QUIET: 'true',
    },
    logFile,
    ready: (exited) => ensureBucket(settings, exited),
  });
}

/** Waits until the server answers, then creates the bucket unless it exists. */
async function ensureBucket(settings: ObjectServerSettings, exited: () => boolean): Promise<void> {
  const client = s3ClientFor(settings);
  try {
    await pollReady(
      'the object server',
      async () => {
        try {
          await client.send(new HeadBucketCommand({ Bucket: settings.bucket }));
          return true;
        } catch (error) {
          const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata
            ?.httpStatusCode;
          if (status !== 404) throw error;
          await client.send(new CreateBucketCommand({ Bucket: settings.bucket }));
          return true;
        }
      },
      exited,
      60_000,
    );
  } finally {
    client.destroy();
  }
}
