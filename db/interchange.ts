import {
  type AnnotationPage,
  buildAnnotationPage,
  plainText,
  type Segment,
} from '../core/annotation';
import type { PoolClient, Queryable } from './pool';

/**
 * I3: the revision an imported transcript becomes. Written in the ingest's own transaction,
 * right after the page's revision 0, so a page with an imported transcript never exists
 * without it (and a refused upload stores neither).
 */

export interface ImportProvenance {
  format: 'page' | 'alto';
  /** The file's schema namespace (PAGE release, ALTO version). */
  namespace: string;
  /** The software or creator the file names; null when it names none. */
  producer: string | null;
  /** SHA-256 (hex) of the uploaded transcript file. */
  sha256: string;
  filename: string | null;
}

export async function insertImportedRevision(
  client: PoolClient,
  args: {
    pageId: number;
    canvasUri: string;
    segments: Segment[];
    language?: string;
    provenance: ImportProvenance;
  },
): Promise<number> {
  const revision = 1;
  const annotationPage = JSON.stringify(
    buildAnnotationPage(args.canvasUri, revision, args.segments, args.language),
  );
  const updated = await client.query(
    `UPDATE pages SET revision = $2, annotation_page = $3, search_text = $4, updated_at = now()
      WHERE id = $1 AND revision = 0`,
    [args.pageId, revision, annotationPage, plainText(args.segments)],
  );
  if (updated.rowCount !== 1) throw new Error(`page ${args.pageId} is not at revision 0`);
  await client.query(
    `INSERT INTO page_revisions (page_id, revision, annotation_page, source, provenance)
     VALUES ($1, $2, $3, 'import', $4)`,
    [args.pageId, revision, annotationPage, JSON.stringify(args.provenance)],
  );
  return revision;
}

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
): Promise<{ title: string | null; pages: IiifPageRow[] } | undefined> {
  const { rows } = await db.query(
    `SELECT i.title, p.id, p.position, p.kind, p.canvas_uri, p.width, p.height, p.duration_ms,
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
