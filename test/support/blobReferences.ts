import { type BlobStore, canonicalKeyFor, newUploadId, temporaryKeyFor } from '../../blobs';
import { insertBlob, lockBlobForReference } from '../../db/blobs';
import { createPage, prepareItem } from '../../db/ingest';
import { type Pool, withTransaction } from '../../db/pool';

/** The bytes as a one-chunk stream, as an upload's part reaches the store. */
export async function* once(bytes: Uint8Array) {
  yield bytes;
}

/** A blob row and its object, referenced by no page (U1: written, hashed, promoted). */
export async function storeBlob(
  pool: Pool,
  store: BlobStore,
  workspaceId: number,
  bytes: Uint8Array,
  mediaType = 'image/png',
): Promise<string> {
  const uploadId = newUploadId();
  const temp = temporaryKeyFor(workspaceId, uploadId);
  const { sha256, size } = await store.writeTemporary(temp, once(bytes));
  const key = canonicalKeyFor(workspaceId, sha256, uploadId);
  await store.promote(temp, key);
  await insertBlob(pool, { key, workspaceId, sha256hex: sha256, sizeBytes: size, mediaType });
  return key;
}

export interface PageOfBlob {
  workspaceId: number;
  key: string;
  itemId: string;
  mediaType: string;
  width: number;
  height: number;
}

/** The reference creator of U3: lock the blob for reference and insert the page, one transaction. */
export async function referenceBlob(
  pool: Pool,
  page: PageOfBlob,
  baseUrl = 'https://quire.test',
): Promise<number> {
  const { workspaceId, key, itemId } = page;
  return withTransaction(pool, async (tx) => {
    const position = await prepareItem(tx, workspaceId, itemId, {
      title: null,
      externalReferenceId: null,
      metadata: {},
    });
    await lockBlobForReference(tx, workspaceId, key);
    const created = await createPage(
      tx,
      {
        workspaceId,
        itemId,
        position,
        kind: 'image',
        blobKey: key,
        mediaType: page.mediaType,
        width: page.width,
        height: page.height,
        durationMs: null,
      },
      baseUrl,
    );
    return created.pageId;
  });
}

/** An image stored as a page of item `stored`, without an upload (the drills' pages). */
export async function storedImagePage(
  pool: Pool,
  store: BlobStore,
  workspaceId: number,
  image: { bytes: Uint8Array; mediaType: string; width: number; height: number },
): Promise<number> {
  const key = await storeBlob(pool, store, workspaceId, image.bytes, image.mediaType);
  const { mediaType, width, height } = image;
  return referenceBlob(
    pool,
    { workspaceId, key, itemId: 'stored', mediaType, width, height },
    'http://quire.test',
  );
}

/** What the blob tests (U1-U3) work in: set by their hooks, so read when a helper runs. */
export interface BlobScope {
  pool: Pool;
  store: BlobStore;
  workspaceId: number;
}

/**
 * The blob rows and objects the U1-U3 tests build on, against whichever store the test runs
 * (the local directory or the S3-compatible server).
 */
export function blobReferences(scope: () => BlobScope) {
  return {
    storedBlob: (bytes: Uint8Array, workspaceId = scope().workspaceId) =>
      storeBlob(scope().pool, scope().store, workspaceId, bytes),
    referenceBlob: (key: string, itemId: string) => {
      const { pool, workspaceId } = scope();
      const page = { workspaceId, key, itemId, mediaType: 'image/png', width: 1, height: 1 };
      return referenceBlob(pool, page);
    },
    /** The open cleanup row of a blob, the one U3's sweeper would act on. */
    cleanupIdFor: async (key: string): Promise<number> => {
      const { rows } = await scope().pool.query(
        `SELECT id FROM blob_cleanups WHERE blob_key = $1 AND status IN ('staged', 'due', 'failing')`,
        [key],
      );
      return rows[0].id;
    },
  };
}
