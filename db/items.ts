import { emptyAnnotationPage } from '../core/annotation';
import { scheduleBlobDeletion } from './blobs';
import { ConflictError, NotFoundError } from './errors';
import { type Pool, type PoolClient, withTransaction } from './pool';
import { ACTIVE_STATUS_LIST } from './sql';

export interface DeletedItem {
  itemId: string;
  pages: number;
  blobsHandedToCleanup: number;
}

/**
 * U3: deletes an item through the application path, children first, in one transaction:
 * checkpoints (they hold recognized text), mirror rows, revisions, then the pages' content
 * and blob references, handing every blob to the fenced cleanup (its bytes keep counting
 * against quota until they are really gone). Jobs and attempts stay as audit evidence (A2).
 * An item with an active job is refused: cancel it first.
 */
export async function deleteItem(
  pool: Pool,
  workspaceId: number,
  itemId: string,
): Promise<DeletedItem> {
  return withTransaction(pool, async (client) => {
    const item = await client.query(
      `SELECT 1 FROM items WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE`,
      [workspaceId, itemId],
    );
    if (item.rowCount === 0) throw new NotFoundError('item_not_found', 'item not found');
    const pages = await client.query<{ id: number; canvas_uri: string; blob_key: string | null }>(
      `SELECT id, canvas_uri, blob_key FROM pages
        WHERE workspace_id = $1 AND item_id = $2 AND deleted_at IS NULL ORDER BY id FOR UPDATE`,
      [workspaceId, itemId],
    );
    const pageIds = pages.rows.map((p) => p.id);
    const active = await client.query(
      `SELECT 1 FROM transcription_jobs WHERE page_id = ANY($1) AND status IN ${ACTIVE_STATUS_LIST} LIMIT 1`,
      [pageIds],
    );
    if (active.rowCount) {
      throw new ConflictError(
        'item_has_active_jobs',
        `item ${itemId} has active jobs; cancel them first`,
      );
    }
    const blobs = await tombstonePages(client, workspaceId, pages.rows);
    await client.query(
      `UPDATE items SET deleted_at = now(), title = NULL, metadata = '{}'::jsonb, external_reference_id = NULL
        WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, itemId],
    );
    return { itemId, pages: pageIds.length, blobsHandedToCleanup: blobs };
  });
}

/**
 * Children first, then the pages themselves: checkpoints (they hold recognized text),
 * mirror rows and revisions go; each page stays as an emptied tombstone (jobs and attempts
 * keep pointing at it, A2) and its blob goes to the fenced cleanup. Returns the blobs handed
 * over. The caller holds the pages' row locks.
 */
async function tombstonePages(
  client: PoolClient,
  workspaceId: number,
  pages: Array<{ id: number; canvas_uri: string; blob_key: string | null }>,
): Promise<number> {
  const pageIds = pages.map((p) => p.id);
  await client.query(
    `DELETE FROM job_checkpoints WHERE job_id IN (SELECT id FROM transcription_jobs WHERE page_id = ANY($1))`,
    [pageIds],
  );
  await client.query('DELETE FROM mirror_outbox WHERE page_id = ANY($1)', [pageIds]);
  await client.query('DELETE FROM page_revisions WHERE page_id = ANY($1)', [pageIds]);
  await client.query('DELETE FROM page_lines WHERE page_id = ANY($1)', [pageIds]);
  let blobs = 0;
  for (const page of pages) {
    await client.query(
      `UPDATE pages SET deleted_at = now(), blob_key = NULL, annotation_page = $2, search_text = '',
              published_snapshot = NULL, published_revision = NULL, updated_at = now()
        WHERE id = $1`,
      [page.id, JSON.stringify(emptyAnnotationPage(page.canvas_uri))],
    );
    if (page.blob_key) {
      // The cleanup checks references again before it deletes anything.
      await scheduleBlobDeletion(client, workspaceId, page.blob_key);
      blobs += 1;
    }
  }
  return blobs;
}

/**
 * J5: after a batch's cancel has committed (every token of it is dead), its incomplete
 * uploads go: pages never transcribed (still at revision 0, no active job) become
 * tombstones and their blobs go to cleanup; items left with no page follow. Pages that
 * already hold a transcript are kept: that work was done and is not lost.
 */
export async function releaseIncompleteBatchPages(
  pool: Pool,
  workspaceId: number,
  batchId: string,
): Promise<{ pages: number; blobsHandedToCleanup: number }> {
  return withTransaction(pool, async (client) => {
    // Lock the candidates first, then decide in a statement of its own: a job created for a
    // page meanwhile (its creator holds the page lock until it commits) is seen by the second
    // statement's snapshot, never missed by one taken before the lock was granted.
    const candidates = await client.query<{ id: number }>(
      `SELECT p.id FROM pages p JOIN batch_pages bp ON bp.page_id = p.id
        WHERE bp.batch_id = $1 AND p.workspace_id = $2 AND p.deleted_at IS NULL AND p.revision = 0
        ORDER BY p.id FOR UPDATE OF p`,
      [batchId, workspaceId],
    );
    if (candidates.rowCount === 0) return { pages: 0, blobsHandedToCleanup: 0 };
    const pages = await client.query<{
      id: number;
      canvas_uri: string;
      blob_key: string | null;
      item_id: string;
    }>(
      `SELECT p.id, p.canvas_uri, p.blob_key, p.item_id FROM pages p
        WHERE p.id = ANY($1) AND p.deleted_at IS NULL AND p.revision = 0
          AND NOT EXISTS (SELECT 1 FROM transcription_jobs j
                           WHERE j.page_id = p.id AND j.status IN ${ACTIVE_STATUS_LIST})
        ORDER BY p.id`,
      [candidates.rows.map((p) => p.id)],
    );
    if (pages.rowCount === 0) return { pages: 0, blobsHandedToCleanup: 0 };
    const blobs = await tombstonePages(client, workspaceId, pages.rows);
    await client.query(
      `UPDATE items i SET deleted_at = now(), title = NULL, metadata = '{}'::jsonb, external_reference_id = NULL
        WHERE i.workspace_id = $1 AND i.id = ANY($2) AND i.deleted_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.workspace_id = i.workspace_id AND p.item_id = i.id
                           AND p.deleted_at IS NULL)`,
      [workspaceId, [...new Set(pages.rows.map((p) => p.item_id))]],
    );
    return { pages: pages.rowCount ?? 0, blobsHandedToCleanup: blobs };
  });
}
