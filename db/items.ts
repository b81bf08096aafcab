import { emptyAnnotationPage } from '../core/annotation';
import { scheduleBlobDeletion } from './blobs';
import { ConflictError, NotFoundError } from './errors';
import { type Pool, withTransaction } from './pool';

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
    if (item.rowCount === 0) throw new NotFoundError('item_not_found', `item ${itemId} not found`);
    const pages = await client.query<{ id: number; canvas_uri: string; blob_key: string | null }>(
      `SELECT id, canvas_uri, blob_key FROM pages
        WHERE workspace_id = $1 AND item_id = $2 AND deleted_at IS NULL ORDER BY id FOR UPDATE`,
      [workspaceId, itemId],
    );
    const pageIds = pages.rows.map((p) => p.id);
    const active = await client.query(
      `SELECT 1 FROM transcription_jobs WHERE page_id = ANY($1) AND status IN ('pending', 'running') LIMIT 1`,
      [pageIds],
    );
    if (active.rowCount) {
      throw new ConflictError(
        'item_has_active_jobs',
        `item ${itemId} has active jobs; cancel them first`,
      );
    }
    await client.query(
      `DELETE FROM job_checkpoints WHERE job_id IN (SELECT id FROM transcription_jobs WHERE page_id = ANY($1))`,
      [pageIds],
    );
    await client.query('DELETE FROM mirror_outbox WHERE page_id = ANY($1)', [pageIds]);
    await client.query('DELETE FROM page_revisions WHERE page_id = ANY($1)', [pageIds]);
    let blobs = 0;
    for (const page of pages.rows) {
      await client.query(
        `UPDATE pages SET deleted_at = now(), blob_key = NULL, annotation_page = $2, search_text = '',
                published_snapshot = NULL, published_revision = NULL, updated_at = now()
          WHERE id = $1`,
        [page.id, JSON.stringify(emptyAnnotationPage(page.canvas_uri))],
      );
      if (page.blob_key) {
        // Another page may share the object (it never does today: each upload is its own
        // object), so the cleanup checks references again before it deletes anything.
        await scheduleBlobDeletion(client, workspaceId, page.blob_key);
        blobs += 1;
      }
    }
    await client.query(
      `UPDATE items SET deleted_at = now(), title = NULL, metadata = '{}'::jsonb, external_reference_id = NULL
        WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, itemId],
    );
    return { itemId, pages: pageIds.length, blobsHandedToCleanup: blobs };
  });
}
