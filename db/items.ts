import { emptyAnnotationPage } from '../core/annotation';
import { type MetadataEntry, searchConfigFor } from '../core/archive';
import type { EngineChoice } from '../core/engineModels';
import { type AuditActor, recordAudit } from './auditLog';
import { scheduleBlobDeletion } from './blobs';
import { ConflictError, MissingReferenceError, NotFoundError } from './errors';
import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';
import { ACTIVE_STATUS_LIST } from './sql';

interface TombstoneCandidate {
  id: number;
  canvas_uri: string;
  blob_key: string | null;
  derivative_key: string | null;
}

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
  /** R10: who deletes; recorded in the audit log in the same transaction. */
  actor?: AuditActor,
): Promise<DeletedItem> {
  return withTransaction(pool, async (client) => {
    const item = await client.query(
      `SELECT 1 FROM items WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE`,
      [workspaceId, itemId],
    );
    if (item.rowCount === 0) throw new NotFoundError('item_not_found', 'item not found');
    const pages = await client.query<TombstoneCandidate>(
      `SELECT id, canvas_uri, blob_key, derivative_key FROM pages
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
    if (actor) {
      await recordAudit(client, actor, {
        action: 'item.delete',
        target: `items/${itemId}`,
        workspaceId,
        before: { pages: pageIds },
        after: null,
      });
    }
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
  pages: TombstoneCandidate[],
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
      `UPDATE pages SET deleted_at = now(), blob_key = NULL, derivative_key = NULL, annotation_page = $2, search_text = '',
              published_snapshot = NULL, published_revision = NULL, updated_at = now()
        WHERE id = $1`,
      [page.id, JSON.stringify(emptyAnnotationPage(page.canvas_uri))],
    );
    if (page.blob_key) {
      // The cleanup checks references again before it deletes anything.
      await scheduleBlobDeletion(client, workspaceId, page.blob_key);
      blobs += 1;
    }
    if (page.derivative_key) {
      // I4: the derivative goes with its page, through the same fenced cleanup.
      await scheduleBlobDeletion(client, workspaceId, page.derivative_key);
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
    const pages = await client.query<TombstoneCandidate & { item_id: string }>(
      `SELECT p.id, p.canvas_uri, p.blob_key, p.derivative_key, p.item_id FROM pages p
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

/** F2: an item as the archive shows it. */
export interface ItemSummary {
  id: string;
  title: string | null;
  collectionId: number | null;
  language: string | null;
  /** V9: the engine and model its jobs use unless a request names others (null: inherited). */
  provider: string | null;
  model: string | null;
  metadata: MetadataEntry[];
  /** Live pages, and those with a transcript (a revision above the empty 0). */
  pages: number;
  transcribedPages: number;
  createdAt: Date;
  updatedAt: Date;
}

const ITEM_COLUMNS = `i.id, i.title, i.collection_id, i.language, i.provider, i.model, i.descriptive_metadata, i.created_at, i.updated_at,
  n.n_pages, n.n_transcribed`;

/** Page and transcribed counts in one pass over the covering index `pages_item_progress`. */
const ITEM_COUNTS = `CROSS JOIN LATERAL (
  SELECT count(*)::int AS n_pages, (count(*) FILTER (WHERE p.revision > 0))::int AS n_transcribed
    FROM pages p WHERE p.workspace_id = i.workspace_id AND p.item_id = i.id AND p.deleted_at IS NULL) n`;

function toItem(r: Record<string, unknown>): ItemSummary {
  return {
    id: r.id as string,
    title: (r.title as string | null) ?? null,
    collectionId: r.collection_id === null ? null : Number(r.collection_id),
    language: (r.language as string | null) ?? null,
    provider: (r.provider as string | null) ?? null,
    model: (r.model as string | null) ?? null,
    metadata: r.descriptive_metadata as MetadataEntry[],
    pages: r.n_pages as number,
    transcribedPages: r.n_transcribed as number,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

const itemNotFound = () => new NotFoundError('item_not_found', 'item not found');

export async function getItem(
  db: Queryable,
  workspaceId: number,
  itemId: string,
): Promise<ItemSummary | undefined> {
  const { rows } = await db.query(
    `SELECT ${ITEM_COLUMNS} FROM items i ${ITEM_COUNTS}
      WHERE i.workspace_id = $1 AND i.id = $2 AND i.deleted_at IS NULL`,
    [workspaceId, itemId],
  );
  return rows[0] ? toItem(rows[0]) : undefined;
}

/**
 * R7: where a page sits in its item as people count (`page 3 of 36`): its rank among the
 * item's live pages by position, and how many there are.
 */
export async function pageNumber(
  db: Queryable,
  workspaceId: number,
  page: { itemId: string; position: number },
): Promise<{ number: number; of: number }> {
  const { rows } = await db.query<{ number: number; of: number }>(
    `SELECT (count(*) FILTER (WHERE position <= $3))::int AS number, count(*)::int AS of
       FROM pages WHERE workspace_id = $1 AND item_id = $2 AND deleted_at IS NULL`,
    [workspaceId, page.itemId, page.position],
  );
  return rows[0] ?? { number: 1, of: 1 };
}

/** Which items a listing shows: all, those at the workspace's root, or one collection's. */
export type ItemScope = { kind: 'all' } | { kind: 'root' } | { kind: 'collection'; id: number };

/** F2: keyset-paged by item id, after `afterId`; `limit + 1` rows tell the caller there is more. */
export async function listItems(
  db: Queryable,
  workspaceId: number,
  options: { scope: ItemScope; afterId?: string; limit: number },
): Promise<ItemSummary[]> {
  const { scope } = options;
  const { rows } = await db.query(
    `SELECT ${ITEM_COLUMNS} FROM items i ${ITEM_COUNTS}
      WHERE i.workspace_id = $1 AND i.deleted_at IS NULL
        AND ($2 = 'all' OR ($2 = 'root' AND i.collection_id IS NULL) OR i.collection_id = $3::bigint)
        AND ($4::text IS NULL OR i.id > $4)
      ORDER BY i.id LIMIT $5`,
    [
      workspaceId,
      scope.kind,
      scope.kind === 'collection' ? scope.id : null,
      options.afterId ?? null,
      options.limit,
    ],
  );
  return rows.map(toItem);
}

export interface ItemPatch {
  title?: string | null;
  metadata?: MetadataEntry[];
  /** A BCP 47 tag; its text-search configuration is applied to the item's pages (F3). */
  language?: string | null;
  /** V9: the engine and model the item's jobs use; null: inherited from its collection. */
  provider?: string | null;
  model?: string | null;
  /** null: to the workspace's root. */
  collectionId?: number | null;
}

function itemAuditView(item: ItemSummary) {
  return {
    title: item.title,
    metadata: item.metadata,
    language: item.language,
    provider: item.provider,
    model: item.model,
    collectionId: item.collectionId,
  };
}

/** F2: describe an item or move it to a collection, with its audit row, in one transaction. */
export async function updateItem(
  pool: Pool,
  actor: AuditActor,
  workspaceId: number,
  itemId: string,
  patch: ItemPatch,
): Promise<ItemSummary> {
  return withTransaction(pool, async (client) => {
    const locked = await client.query(
      'SELECT 1 FROM items WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE',
      [workspaceId, itemId],
    );
    if (locked.rowCount === 0) throw itemNotFound();
    const before = (await getItem(client, workspaceId, itemId))!;
    if (patch.collectionId != null) {
      const target = await client.query(
        'SELECT 1 FROM collections WHERE workspace_id = $1 AND id = $2 FOR KEY SHARE',
        [workspaceId, patch.collectionId],
      );
      if (target.rowCount === 0) {
        throw new MissingReferenceError('collection_not_found', 'the collection does not exist');
      }
    }
    const updated = await client.query(
      `UPDATE items SET
          title = CASE WHEN $3 THEN $4 ELSE title END,
          descriptive_metadata = CASE WHEN $5 THEN $6::jsonb ELSE descriptive_metadata END,
          language = CASE WHEN $7 THEN $8 ELSE language END,
          search_config = CASE WHEN $7 THEN $9::regconfig ELSE search_config END,
          collection_id = CASE WHEN $10 THEN $11::bigint ELSE collection_id END,
          provider = CASE WHEN $12 THEN $13 ELSE provider END,
          model = CASE WHEN $14 THEN $15 ELSE model END,
          updated_at = now()
        WHERE workspace_id = $1 AND id = $2`,
      [
        workspaceId,
        itemId,
        patch.title !== undefined,
        patch.title ?? null,
        patch.metadata !== undefined,
        JSON.stringify(patch.metadata ?? []),
        patch.language !== undefined,
        patch.language ?? null,
        searchConfigFor(patch.language),
        patch.collectionId !== undefined,
        patch.collectionId ?? null,
        patch.provider !== undefined,
        patch.provider ?? null,
        patch.model !== undefined,
        patch.model ?? null,
      ],
    );
    if (updated.rowCount !== 1) throw new Error('item changed while locked');
    if (patch.language !== undefined) {
      // F3: the pages are indexed again in the item's language, in the same transaction.
      await client.query(
        `UPDATE pages p SET search_config = i.search_config
           FROM items i WHERE i.workspace_id = p.workspace_id AND i.id = p.item_id
            AND p.workspace_id = $1 AND p.item_id = $2 AND p.search_config <> i.search_config`,
        [workspaceId, itemId],
      );
    }
    const after = (await getItem(client, workspaceId, itemId))!;
    await recordAudit(client, actor, {
      action: 'item.update',
      target: `items/${itemId}`,
      workspaceId,
      before: itemAuditView(before),
      after: itemAuditView(after),
    });
    return after;
  });
}

/** F2: a page of an item, in order, as the archive lists it. */
export interface ItemPage {
  pageId: number;
  position: number;
  kind: 'image' | 'audio';
  canvasUri: string;
  revision: number;
  width: number | null;
  height: number | null;
  durationMs: number | null;
  hasMedia: boolean;
  lines: number;
}

export async function listItemPages(
  db: Queryable,
  workspaceId: number,
  itemId: string,
): Promise<ItemPage[]> {
  const { rows } = await db.query(
    `SELECT id, position, kind, canvas_uri, revision, width, height, duration_ms, blob_key IS NOT NULL AS has_media,
            jsonb_array_length(annotation_page->'items') AS lines
       FROM pages WHERE workspace_id = $1 AND item_id = $2 AND deleted_at IS NULL
      ORDER BY position LIMIT 10000`,
    [workspaceId, itemId],
  );
  return rows.map((r) => ({
    pageId: Number(r.id),
    position: r.position,
    kind: r.kind,
    canvasUri: r.canvas_uri,
    revision: r.revision,
    width: r.width ?? null,
    height: r.height ?? null,
    durationMs: r.duration_ms ?? null,
    hasMedia: r.has_media,
    lines: r.lines,
  }));
}

/**
 * V9: the item's own provider, model and language, each else the nearest collection's up the
 * item's tree that names one (a collection's choice is inherited by its items and sub-collections).
 */
export async function inheritedEngineChoice(
  db: Queryable,
  workspaceId: number,
  itemId: string,
): Promise<EngineChoice> {
  const { rows } = await db.query(
    `WITH RECURSIVE tree AS (
       SELECT c.id, c.parent_id, c.provider, c.model, c.language, 1 AS depth
         FROM items i JOIN collections c ON c.workspace_id = i.workspace_id AND c.id = i.collection_id
        WHERE i.workspace_id = $1 AND i.id = $2
       UNION ALL
       SELECT c.id, c.parent_id, c.provider, c.model, c.language, tree.depth + 1
         FROM collections c JOIN tree ON c.workspace_id = $1 AND c.id = tree.parent_id
        WHERE tree.depth < 100
     )
     SELECT coalesce(i.provider, (SELECT provider FROM tree WHERE provider IS NOT NULL ORDER BY depth LIMIT 1)) AS provider,
            coalesce(i.model, (SELECT model FROM tree WHERE model IS NOT NULL ORDER BY depth LIMIT 1)) AS model,
            coalesce(i.language, (SELECT language FROM tree WHERE language IS NOT NULL ORDER BY depth LIMIT 1)) AS language
       FROM items i WHERE i.workspace_id = $1 AND i.id = $2`,
    [workspaceId, itemId],
  );
  const row = rows[0] ?? {};
  const choice: EngineChoice = {};
  if (row.provider) choice.provider = row.provider as string;
  if (row.model) choice.model = row.model as string;
  if (row.language) choice.language = row.language as string;
  return choice;
}
