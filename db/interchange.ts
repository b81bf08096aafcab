import type { AnnotationPage } from '../core/annotation';
import type { Queryable } from './pool';

/**
 * I1: who reads an item's IIIF resources. `draft`: the workspace's own key or console
 * session, shown every page's current revision. `published`: anyone else, shown only the
 * pages that have been published, each with its published snapshot.
 */
export type IiifView = 'draft' | 'published';

export interface IiifPageRow {
  id: number;
  position: number;
  kind: 'image' | 'audio';
  canvasUri: string;
  width: number | null;
  height: number | null;
  durationMs: number | null;
  blobKey: string | null;
  mediaType: string | null;
  sizeBytes: number | null;
  annotationPage: AnnotationPage | null;
}

/** The item's title and the pages the view may see, in order; undefined when there are none. */
export async function iiifItemPages(
  db: Queryable,
  workspaceId: number,
  itemId: string,
  view: IiifView,
): Promise<
  | {
      title: string | null;
      metadata: Array<{ label: string; value: string }>;
      collectionId: number | null;
      pages: IiifPageRow[];
    }
  | undefined
> {
  const { rows } = await db.query(
    `SELECT i.title, i.descriptive_metadata, i.collection_id, p.id, p.position, p.kind, p.canvas_uri, p.width, p.height, p.duration_ms,
            p.blob_key, p.media_type, b.size_bytes,
            CASE WHEN $3 = 'draft' THEN p.annotation_page ELSE p.published_snapshot END AS annotation_page
       FROM items i
       JOIN pages p ON p.workspace_id = i.workspace_id AND p.item_id = i.id AND p.deleted_at IS NULL
       LEFT JOIN blobs b ON b.key = p.blob_key
      WHERE i.workspace_id = $1 AND i.id = $2 AND i.deleted_at IS NULL
        AND ($3 = 'draft' OR p.published_revision IS NOT NULL)
      ORDER BY p.position`,
    [workspaceId, itemId, view],
  );
  if (rows.length === 0) return undefined;
  return {
    title: rows[0].title ?? null,
    metadata: rows[0].descriptive_metadata ?? [],
    collectionId: rows[0].collection_id === null ? null : Number(rows[0].collection_id),
    pages: rows.map((r) => ({
      id: Number(r.id),
      position: r.position,
      kind: r.kind,
      canvasUri: r.canvas_uri,
      width: r.width ?? null,
      height: r.height ?? null,
      durationMs: r.duration_ms ?? null,
      blobKey: r.blob_key ?? null,
      mediaType: r.media_type ?? null,
      sizeBytes: r.size_bytes === null ? null : Number(r.size_bytes),
      annotationPage: (r.annotation_page as AnnotationPage | null) ?? null,
    })),
  };
}

/**
 * F2: where a page is now (its item, its canvas URI), when the view may see it: a canvas URI
 * keeps working after its page moved to another item.
 */
export async function iiifPageLocation(
  db: Queryable,
  workspaceId: number,
  pageId: number,
  view: IiifView,
): Promise<{ itemId: string; canvasUri: string } | undefined> {
  const { rows } = await db.query(
    `SELECT p.item_id, p.canvas_uri FROM pages p
       JOIN items i ON i.workspace_id = p.workspace_id AND i.id = p.item_id AND i.deleted_at IS NULL
      WHERE p.workspace_id = $1 AND p.id = $2 AND p.deleted_at IS NULL
        AND ($3 = 'draft' OR p.published_revision IS NOT NULL)`,
    [workspaceId, pageId, view],
  );
  return rows[0] ? { itemId: rows[0].item_id, canvasUri: rows[0].canvas_uri } : undefined;
}
