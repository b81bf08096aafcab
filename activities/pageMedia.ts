import { ApplicationFailure } from '@temporalio/activity';
import { isMissingObject } from '../blobs/store';
import { CONFIG_MISMATCH } from '../core/failures';
import type { MediaInput } from '../core/provider';
import { blobIsLive } from '../db/blobs';
import { readAttemptPage } from '../db/pages';
import type { TranscriptionDeps } from './attemptContext';

/** An attempt's page and its media, as a local file an engine reads (D8: from the fleet's store). */
export function createPageMedia(deps: TranscriptionDeps) {
  const { pool } = deps;

  /** The page with its media as an engine reads it: a local file. */
  async function pageMedia(pageId: number) {
    const page = await readAttemptPage(pool, pageId);
    const media: MediaInput = {
      path: page.blobKey ? await mediaPath(page.blobKey) : '',
      mediaType: page.mediaType ?? 'application/octet-stream',
    };
    return { media, page };
  }

  /**
   * D8: an object the installation holds that this worker's store says is not there means
   * this worker is configured with another store: nothing is charged, the worker stops
   * taking work, and the step runs again on a worker that can read it.
   */
  async function mediaPath(blobKey: string): Promise<string> {
    try {
      return await deps.resolveMedia(blobKey);
    } catch (error) {
      if (!isMissingObject(error) || !(await blobIsLive(pool, blobKey))) throw error;
      const setting = 'QUIRE_BLOB_STORE / QUIRE_BLOB_DIR / QUIRE_S3_*';
      deps.logger.error(
        { errorClass: CONFIG_MISMATCH, setting },
        "this worker cannot read an object the installation wrote: its blob store is not the fleet's; it takes no more work",
      );
      deps.onConfigurationFault?.(setting);
      throw ApplicationFailure.create({
        type: CONFIG_MISMATCH,
        message: `an object the installation wrote is missing from this worker's blob store (${setting})`,
        nonRetryable: true,
      });
    }
  }

  return { pageMedia };
}
