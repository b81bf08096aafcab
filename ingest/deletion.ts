import { processCleanup } from '../blobs/cleanup';
import type { BlobStore } from '../blobs/store';
import { releaseStagedCleanup } from '../db/blobs';
import type { Pool } from '../db/pool';

/**
 * An ingest that refuses its upload gives every staged reservation straight to the fenced
 * deletion the cleanup schedule runs (U3), leaving no row and no byte behind; a deletion
 * that fails keeps its row (and its quota) for the cleanup schedule.
 */
export async function discardStagedUploads(
  pool: Pool,
  blobStore: BlobStore,
  cleanupIds: readonly number[],
  now: Date,
): Promise<void> {
  for (const id of cleanupIds) {
    try {
      await releaseStagedCleanup(pool, id);
      await processCleanup(pool, blobStore, id, now, { forget: true });
    } catch {
      // The row is still pending and due: the cleanup schedule finishes the job.
    }
  }
}
