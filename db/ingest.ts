import { type MetadataEntry, searchConfigFor } from '../core/archive';
import { canvasUriFor, uuidv7 } from '../core/ids';
import type { MediaKind } from '../core/media';
import { MissingReferenceError, RevisionConflictError } from './errors';
import type { PoolClient, Queryable } from './pool';
import { commitRevision } from './revisions';

/**
 * The rows one ingest writes (SPEC §7 `POST /workspaces/{ws}/batches`): the batch, its items,
 * a page per file at revision 0 with its `initial` revision row, and the batch's page list.
 * All of it is written by one transaction in `ingest/commit.ts`. These are the only writers of
 * batches, items and new pages: tests and benches seed through them too.
 */

export interface BatchResultPage {
  pageId: number;
  itemId: string;
  canvasUri: string;
  jobId?: string;
}

/** I9: what became of one file of a batch: stored (as this many pages) or refused alone. */
export type FileOutcome =
  | { index: number; filename: string | null; status: 'stored'; pages: number }
  | {
      index: number;
      filename: string | null;
      status: 'refused';
      error: { code: string; message: string };
    };

export interface BatchResult {
  batchId: string;
  pages: BatchResultPage[];
  /** I9: each file's outcome, in upload order. */
  files: FileOutcome[];
}

/**
 * Creates a batch; `undefined` when its idempotency key already names one (a retried
 * ingest). Without a key no batch can be named already, so the id is always returned.
 */
export function createBatch(db: Queryable, workspaceId: number): Promise<string>;
export function createBatch(
  db: Queryable,
  workspaceId: number,
  idempotencyKey: string | null,
  files?: FileOutcome[],
): Promise<string | undefined>;
export async function createBatch(
  db: Queryable,
  workspaceId: number,
  idempotencyKey: string | null = null,
  files: FileOutcome[] = [],
): Promise<string | undefined> {
  const id = uuidv7();
  const result = await db.query(
    `INSERT INTO batches (id, workspace_id, idempotency_key, file_outcomes) VALUES ($1, $2, $3, $4)
     ON CONFLICT (workspace_id, idempotency_key) DO NOTHING`,
    [id, workspaceId, idempotencyKey, JSON.stringify(files)],
  );
  return result.rowCount === 1 ? id : undefined;
}

export async function findBatchByIdempotencyKey(
  db: Queryable,
  workspaceId: number,
  idempotencyKey: string,
): Promise<BatchResult | undefined> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM batches WHERE workspace_id = $1 AND idempotency_key = $2',
    [workspaceId, idempotencyKey],
  );
  const id = rows[0]?.id;
  return id === undefined ? undefined : loadBatchResult(db, workspaceId, id);
}

export async function loadBatchResult(
  db: Queryable,
  workspaceId: number,
  batchId: string,
): Promise<BatchResult> {
  const { rows } = await db.query<{
    page_id: number;
    item_id: string;
    canvas_uri: string;
    job_id: string | null;
  }>(
    `SELECT bp.page_id, p.item_id, p.canvas_uri, bp.job_id
       FROM batch_pages bp JOIN batches b ON b.id = bp.batch_id JOIN pages p ON p.id = bp.page_id
      WHERE bp.batch_id = $1 AND b.workspace_id = $2
      ORDER BY bp.ordinal`,
    [batchId, workspaceId],
  );
  const outcomes = await db.query<{ file_outcomes: FileOutcome[] }>(
    'SELECT file_outcomes FROM batches WHERE id = $1 AND workspace_id = $2',
    [batchId, workspaceId],
  );
  return {
    batchId,
    files: outcomes.rows[0]?.file_outcomes ?? [],
    pages: rows.map((r) => ({
      pageId: r.page_id,
      itemId: r.item_id,
      canvasUri: r.canvas_uri,
      ...(r.job_id ? { jobId: r.job_id } : {}),
    })),
  };
}

/**
 * The item pages are appended to: created when new, locked when it exists so two ingests
 * into one item take positions one after the other. Returns the next free position.
 */
export interface NewItemFields {
  title: string | null;
  externalReferenceId: string | null;
  metadata: Record<string, unknown>;
  /** F5: label/value pairs describing it (the archive's, not the integrator's `metadata`). */
  descriptiveMetadata?: MetadataEntry[];
  /** F5: the collection a new item is placed in; null: the workspace's root. */
  collectionId?: number | null;
  /** V9: the language, engine and model its jobs inherit. */
  language?: string | null;
  provider?: string | null;
  model?: string | null;
}

export async function prepareItem(
  client: PoolClient,
  workspaceId: number,
  itemId: string,
  fields: NewItemFields = { title: null, externalReferenceId: null, metadata: {} },
): Promise<number> {
  if (fields.collectionId != null) {
    const target = await client.query(
      'SELECT 1 FROM collections WHERE workspace_id = $1 AND id = $2 FOR KEY SHARE',
      [workspaceId, fields.collectionId],
    );
    if (target.rowCount === 0) {
      throw new MissingReferenceError('collection_not_found', 'the collection does not exist');
    }
  }
  // An existing item keeps its own description: only a new (or deleted) one takes these.
  await client.query(
    `INSERT INTO items (workspace_id, id, title, external_reference_id, metadata, collection_id,
                        language, search_config, provider, model, descriptive_metadata)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::regconfig, $9, $10, $11::jsonb)
     ON CONFLICT (workspace_id, id) DO UPDATE
       SET deleted_at = NULL, title = EXCLUDED.title, external_reference_id = EXCLUDED.external_reference_id,
           metadata = EXCLUDED.metadata, collection_id = EXCLUDED.collection_id,
           language = EXCLUDED.language, search_config = EXCLUDED.search_config,
           provider = EXCLUDED.provider, model = EXCLUDED.model,
           descriptive_metadata = EXCLUDED.descriptive_metadata
       WHERE items.deleted_at IS NOT NULL`,
    [
      workspaceId,
      itemId,
      fields.title,
      fields.externalReferenceId,
      JSON.stringify(fields.metadata),
      fields.collectionId ?? null,
      fields.language ?? null,
      searchConfigFor(fields.language ?? null),
      fields.provider ?? null,
      fields.model ?? null,
      JSON.stringify(fields.descriptiveMetadata ?? []),
    ],
  );
  await client.query('SELECT 1 FROM items WHERE workspace_id = $1 AND id = $2 FOR UPDATE', [
    workspaceId,
    itemId,
  ]);
  const { rows } = await client.query<{ next: number }>(
    'SELECT coalesce(max(position) + 1, 0)::int AS next FROM pages WHERE workspace_id = $1 AND item_id = $2',
    [workspaceId, itemId],
  );
  return rows[0]?.next ?? 0;
}

export interface NewPage {
  workspaceId: number;
  itemId: string;
  position: number;
  kind: MediaKind;
  /** The stored media; none for a page whose engine reads no file (the simulated one). */
  blobKey?: string | null;
  mediaType?: string | null;
  width?: number | null;
  height?: number | null;
  durationMs?: number | null;
}

/**
 * Creates a page at revision 0: the empty AnnotationPage of its canvas and the `initial`
 * revision row. A caller with media has already locked its blob for reference
 * (`lockBlobForReference`).
 */
export async function createPage(
  client: PoolClient,
  page: NewPage,
  publicBaseUrl: string,
): Promise<{ pageId: number; canvasUri: string }> {
  // The id comes first because the canvas URI (and so the AnnotationPage) contains it.
  const next = await client.query<{ id: number }>(
    `SELECT nextval(pg_get_serial_sequence('pages', 'id'))::bigint AS id`,
  );
  const pageId = next.rows[0]!.id;
  const canvasUri = canvasUriFor(publicBaseUrl, page.workspaceId, page.itemId, pageId);
  // Revision 0's AnnotationPage is written below, by the one writer of revisions, before
  // this transaction lets anyone see the row.
  await client.query(
    // F3: the page is indexed in its item's language from the start.
    `INSERT INTO pages (id, workspace_id, item_id, position, kind, canvas_uri, blob_key, media_type, width, height,
       duration_ms, revision, annotation_page, search_config)
     OVERRIDING SYSTEM VALUE
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, '{}'::jsonb,
             (SELECT search_config FROM items WHERE workspace_id = $2 AND id = $3))`,
    [
      pageId,
      page.workspaceId,
      page.itemId,
      page.position,
      page.kind,
      canvasUri,
      page.blobKey ?? null,
      page.mediaType ?? null,
      page.width ?? null,
      page.height ?? null,
      page.durationMs ?? null,
    ],
  );
  const initial = await commitRevision(client, {
    pageId,
    canvasUri,
    expectedRevision: null,
    segments: [],
    provenance: { source: 'initial' },
  });
  if (initial.state === 'conflict') throw new RevisionConflictError(pageId, initial);
  return { pageId, canvasUri };
}

export async function insertBatchPage(
  client: PoolClient,
  row: { batchId: string; ordinal: number; pageId: number },
): Promise<void> {
  await client.query('INSERT INTO batch_pages (batch_id, ordinal, page_id) VALUES ($1, $2, $3)', [
    row.batchId,
    row.ordinal,
    row.pageId,
  ]);
}

export async function recordBatchJobs(
  client: PoolClient,
  batchId: string,
  jobs: ReadonlyArray<{ pageId: number; jobId: string }>,
): Promise<void> {
  for (const job of jobs) {
    await client.query('UPDATE batch_pages SET job_id = $3 WHERE batch_id = $1 AND page_id = $2', [
      batchId,
      job.pageId,
      job.jobId,
    ]);
  }
}
