import { type BlobStore, canonicalKeyFor, newUploadId, temporaryKeyFor } from '../../blobs';
import { insertBlob, lockBlobForReference } from '../../db/blobs';
import { createPage, prepareItem } from '../../db/ingest';
import { type Pool, withTransaction } from '../../db/pool';

/** What the blob tests (U1-U3) work in: set by their hooks, so read when a helper runs. */
export interface BlobScope {
  pool: Pool;
  store: BlobStore;
  workspaceId: number;
}

/** The bytes as a one-chunk stream, as an upload's part reaches the store. */
export async function* once(bytes: Uint8Array) {
  yield bytes;
}

/**
 * The blob rows and objects the U1-U3 tests build on, against whichever store the test runs
 * (the local directory or the S3-compatible server).
 */
export function blobReferences(scope: () => BlobScope) {
  /** A blob row and its object, referenced by no page. */
  async function storedBlob(bytes: Uint8Array, workspaceId = scope().workspaceId): Promise<string> {
    const { pool, store } = scope();
    const uploadId = newUploadId();
    const temp = temporaryKeyFor(workspaceId, uploadId);
    const { sha256, size } = await store.writeTemporary(temp, once(bytes));
    const key = canonicalKeyFor(workspaceId, sha256, uploadId);
    await store.promote(temp, key);
    await insertBlob(pool, {
      key,
      workspaceId,
      sha256hex: sha256,
      sizeBytes: size,
      mediaType: 'image/png',
    });
    return key;
  }

  /** The reference creator of U3: lock the blob for reference and insert the page, one transaction. */
  async function referenceBlob(key: string, itemId: string): Promise<number> {
    const { pool, workspaceId } = scope();
    return withTransaction(pool, async (tx) => {
      const position = await prepareItem(tx, workspaceId, itemId, {
        title: null,
        externalReferenceId: null,
        metadata: {},
      });
      await lockBlobForReference(tx, workspaceId, key);
      const page = await createPage(
        tx,
        {
          workspaceId,
          itemId,
          position,
          kind: 'image',
          blobKey: key,
          mediaType: 'image/png',
          width: 1,
          height: 1,
          durationMs: null,
        },
        'https://quire.test',
      );
      return page.pageId;
    });
  }

  /** The open cleanup row of a blob, the one U3's sweeper would act on. */
  async function cleanupIdFor(key: string): Promise<number> {
    const { rows } = await scope().pool.query(
      `SELECT id FROM blob_cleanups WHERE blob_key = $1 AND status IN ('staged', 'due', 'failing')`,
      [key],
    );
    return rows[0].id;
  }

  return { storedBlob, referenceBlob, cleanupIdFor };
}
