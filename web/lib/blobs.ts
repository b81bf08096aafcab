import 'server-only';
import { resolve } from 'node:path';
import { type BlobStore, createLocalBlobStore } from '@quire/blobs';
import { config } from './server';

const globals = globalThis as unknown as { quireBlobStore?: BlobStore };

/** The blob store of this process (local directory by default). */
export function blobStore(): BlobStore {
  globals.quireBlobStore ??= createLocalBlobStore(resolve(config().QUIRE_BLOB_DIR));
  return globals.quireBlobStore;
}
