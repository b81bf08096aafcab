import 'server-only';
import type { BlobStore } from '@quire/blobs';
import { createBlobStore } from '@quire/blobs/fromConfig';
import { config } from './server';

const globals = globalThis as unknown as { quireBlobStore?: BlobStore };

/** The blob store of this process (local directory by default, or the shared bucket). */
export function blobStore(): BlobStore {
  globals.quireBlobStore ??= createBlobStore(config());
  return globals.quireBlobStore;
}
