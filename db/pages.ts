import { type AnnotationPage, buildAnnotationPage, emptyAnnotationPage, plainText, type Segment } from '../core/annotation';
import { canvasUriFor } from '../core/ids';
import type { PoolClient, Queryable } from './pool';

export interface PageRow {
  id: number;
  workspaceId: number;
  itemId: string;
  position: number;
  kind: 'image' | 'audio';
  canvasUri: string;
  blobKey: string | null;
  mediaType: string | null;
  width: number | null;
  height: number | null;
  durationMs: number | null;
  revision: number;
  annotationPage: AnnotationPage;
  publishedRevision: number | null;
}

const PAGE_COLUMNS = `id, workspace_id, item_id, position, kind, canvas_uri, blob_key, media_type, width, height,
  duration_ms, revision, annotation_page, published_revision`;

function toPage(r: Record<string, unknown>): PageRow {
  return {
    id: r.id as number,
    workspaceId: r.workspace_id as number,
    itemId: r.item_id as string,
    position: r.position as number,
    kind: r.kind as 'image' | 'audio',
    canvasUri: r.canvas_uri as string,
    blobKey: (r.blob_key as string | null) ?? null,
    mediaType: (r.media_type as string | null) ?? null,
    width: (r.width as number | null) ?? null,
    height: (r.height as number | null) ?? null,
    durationMs: (r.duration_ms as number | null) ?? null,
    revision: r.revision as number,
    annotationPage: r.annotation_page as AnnotationPage,
    publishedRevision: (r.published_revision as number | null) ?? null,
  };
}

export async function getPage(db: Queryable, workspaceId: number, pageId: number): Promise<PageRow | undefined> {
  const { rows } = await db.query(`SELECT ${PAGE_COLUMNS} FROM pages WHERE workspace_id = $1 AND id = $2`, [
    workspaceId,
    pageId,
  ]);
  return rows[0] ? toPage(rows[0]) : undefined;
}

export async function getPageForUpdate(client: PoolClient, workspaceId: number, pageId: number) {
  const { rows } = await client.query(
    `SELECT ${PAGE_COLUMNS} FROM pages WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
    [workspaceId, pageId],
  );
  return rows[0] ? toPage(rows[0]) : undefined;
}

export interface NewPage {
  workspaceId: number;
  itemId: string;
  position: number;
  kind: 'image' | 'audio';
  blobKey?: string | null;
  mediaType?: string | null;
  width?: number | null;
  height?: number | null;
  durationMs?: number | null;
}

/** Inserts the item when new; used by tests, seeding and ingest. */
export async function ensureItem(
  client: Queryable,
  workspaceId: number,
  itemId: string,
  fields: { title?: string | null; externalReferenceId?: string | null; metadata?: Record<string, unknown> } = {},
): Promise<void> {
  await client.query(
    `INSERT INTO items (workspace_id, id, title, external_reference_id, metadata)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workspace_id, id) DO NOTHING`,
    [workspaceId, itemId, fields.title ?? null, fields.externalReferenceId ?? null, JSON.stringify(fields.metadata ?? {})],
  );
}

/** Creates a page at revision 0 (the empty AnnotationPage) with its revision-0 history row. */
export async function insertPage(client: PoolClient, page: NewPage, publicBaseUrl: string): Promise<PageRow> {
  const { rows } = await client.query(
    `INSERT INTO pages (workspace_id, item_id, position, kind, canvas_uri, blob_key, media_type, width, height,
       duration_ms, annotation_page)
     VALUES ($1, $2, $3, $4, '', $5, $6, $7, $8, $9, '{}'::jsonb)
     RETURNING id`,
    [
      page.workspaceId,
      page.itemId,
      page.position,
      page.kind,
      page.blobKey ?? null,
      page.mediaType ?? null,
      page.width ?? null,
      page.height ?? null,
      page.durationMs ?? null,
    ],
  );
  const id = rows[0]!.id as number;
  const canvasUri = canvasUriFor(publicBaseUrl, page.workspaceId, page.itemId, id);
  const annotationPage = emptyAnnotationPage(canvasUri);
  const updated = await client.query(
    `UPDATE pages SET canvas_uri = $2, annotation_page = $3 WHERE id = $1 RETURNING ${PAGE_COLUMNS}`,
    [id, canvasUri, JSON.stringify(annotationPage)],
  );
  await client.query(
    `INSERT INTO page_revisions (page_id, revision, annotation_page, source) VALUES ($1, 0, $2, 'initial')`,
    [id, JSON.stringify(annotationPage)],
  );
  return toPage(updated.rows[0]);
}

export interface PageEditResult {
  state: 'saved' | 'stale' | 'missing';
  revision: number;
}

/**
 * A human edit by compare-and-set on the revision the editor read (If-Match). A stale
 * revision changes nothing and reports the current one.
 */
export async function savePageEdit(
  client: PoolClient,
  args: {
    workspaceId: number;
    pageId: number;
    expectedRevision: number;
    segments: Segment[];
    language?: string;
    editedBy: string;
  },
): Promise<PageEditResult> {
  const page = await getPageForUpdate(client, args.workspaceId, args.pageId);
  if (!page) return { state: 'missing', revision: -1 };
  if (page.revision !== args.expectedRevision) return { state: 'stale', revision: page.revision };
  const revision = page.revision + 1;
  const annotationPage = buildAnnotationPage(page.canvasUri, revision, args.segments, args.language);
  await client.query(
    `UPDATE pages SET revision = $2, annotation_page = $3, search_text = $4, updated_at = now()
      WHERE id = $1 AND revision = $5`,
    [page.id, revision, JSON.stringify(annotationPage), plainText(args.segments), page.revision],
  );
  await client.query(
    `INSERT INTO page_revisions (page_id, revision, annotation_page, source, edited_by) VALUES ($1, $2, $3, 'human', $4)`,
    [page.id, revision, JSON.stringify(annotationPage), args.editedBy],
  );
  return { state: 'saved', revision };
}
