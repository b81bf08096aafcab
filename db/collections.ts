import type { MetadataEntry } from '../core/archive';
import { DomainError } from '../core/errors';
import { type AuditActor, recordAudit } from './auditLog';
import { ConflictError, NotFoundError } from './errors';
import type { IiifView } from './interchange';
import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';

/**
 * F1: collections (fonds, series, box, project), nested within one workspace. Every change is
 * written with its audit row (M4) in one transaction, naming the key that made it.
 */

export interface Collection {
  id: number;
  workspaceId: number;
  parentId: number | null;
  title: string;
  description: string | null;
  metadata: MetadataEntry[];
  /** V9: the language, engine and model its items' jobs inherit (null: its parent's). */
  language: string | null;
  provider: string | null;
  model: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface CollectionSummary extends Collection {
  /** Direct sub-collections and live items. */
  collections: number;
  items: number;
}

const COLUMNS =
  'c.id, c.workspace_id, c.parent_id, c.title, c.description, c.metadata, c.language, c.provider, c.model, c.created_at, c.updated_at';

function toCollection(r: Record<string, unknown>): Collection {
  return {
    id: Number(r.id),
    workspaceId: Number(r.workspace_id),
    parentId: r.parent_id === null ? null : Number(r.parent_id),
    title: r.title as string,
    description: (r.description as string | null) ?? null,
    metadata: r.metadata as MetadataEntry[],
    language: (r.language as string | null) ?? null,
    provider: (r.provider as string | null) ?? null,
    model: (r.model as string | null) ?? null,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

const notFound = () => new NotFoundError('collection_not_found', 'collection not found');

/**
 * Moves and creations in one workspace's tree take this lock first, so two moves cannot each
 * pass the cycle check against the other's old tree. The first key is Quire's namespace.
 */
async function lockTree(client: PoolClient, workspaceId: number): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock(7401119, $1::int)', [workspaceId]);
}

export async function getCollection(
  db: Queryable,
  workspaceId: number,
  id: number,
): Promise<CollectionSummary | undefined> {
  const { rows } = await db.query(
    `SELECT ${COLUMNS},
            (SELECT count(*) FROM collections s WHERE s.workspace_id = c.workspace_id AND s.parent_id = c.id)::int AS n_collections,
            (SELECT count(*) FROM items i WHERE i.workspace_id = c.workspace_id AND i.collection_id = c.id
                AND i.deleted_at IS NULL)::int AS n_items
       FROM collections c WHERE c.workspace_id = $1 AND c.id = $2`,
    [workspaceId, id],
  );
  const r = rows[0];
  return r ? { ...toCollection(r), collections: r.n_collections, items: r.n_items } : undefined;
}

/** The collection's ancestors, root first (for a breadcrumb); empty for a root collection. */
export async function collectionPath(
  db: Queryable,
  workspaceId: number,
  id: number,
): Promise<Array<{ id: number; title: string }>> {
  const { rows } = await db.query(
    `WITH RECURSIVE up AS (
       SELECT parent_id, 0 AS depth FROM collections WHERE workspace_id = $1 AND id = $2
       UNION ALL
       SELECT c.parent_id, up.depth + 1 FROM collections c JOIN up ON c.id = up.parent_id
        WHERE c.workspace_id = $1 AND up.depth < 1000)
     SELECT c.id, c.title FROM up JOIN collections c ON c.id = up.parent_id AND c.workspace_id = $1
      ORDER BY up.depth DESC`,
    [workspaceId, id],
  );
  return rows.map((r) => ({ id: Number(r.id), title: r.title }));
}

/** Direct children of `parentId` (null: the workspace's root), by id, keyset-paged. */
export async function listCollections(
  db: Queryable,
  workspaceId: number,
  options: { parentId: number | null; afterId?: number; limit: number },
): Promise<CollectionSummary[]> {
  const { rows } = await db.query(
    `SELECT ${COLUMNS},
            (SELECT count(*) FROM collections s WHERE s.workspace_id = c.workspace_id AND s.parent_id = c.id)::int AS n_collections,
            (SELECT count(*) FROM items i WHERE i.workspace_id = c.workspace_id AND i.collection_id = c.id
                AND i.deleted_at IS NULL)::int AS n_items
       FROM collections c
      WHERE c.workspace_id = $1 AND c.parent_id IS NOT DISTINCT FROM $2::bigint
        AND ($3::bigint IS NULL OR c.id > $3)
      ORDER BY c.id LIMIT $4`,
    [workspaceId, options.parentId, options.afterId ?? null, options.limit],
  );
  return rows.map((r) => ({ ...toCollection(r), collections: r.n_collections, items: r.n_items }));
}

/** Every collection of the workspace with its depth-first path title (for pickers). */
export async function listCollectionChoices(
  db: Queryable,
  workspaceId: number,
): Promise<Array<{ id: number; label: string }>> {
  const { rows } = await db.query(
    `WITH RECURSIVE tree AS (
       SELECT id, title, ARRAY[title] AS path, ARRAY[id] AS ids FROM collections
        WHERE workspace_id = $1 AND parent_id IS NULL
       UNION ALL
       SELECT c.id, c.title, tree.path || c.title, tree.ids || c.id FROM collections c
         JOIN tree ON c.parent_id = tree.id WHERE c.workspace_id = $1 AND cardinality(tree.ids) < 100)
     SELECT id, array_to_string(path, ' / ') AS label FROM tree ORDER BY ids LIMIT 1000`,
    [workspaceId],
  );
  return rows.map((r) => ({ id: Number(r.id), label: r.label }));
}

/** V9: what a collection's items inherit; null or absent: its parent's. */
export interface EngineChoiceInput {
  language?: string | null;
  provider?: string | null;
  model?: string | null;
}

export interface CollectionInput extends EngineChoiceInput {
  title: string;
  description?: string | null;
  metadata?: MetadataEntry[];
  parentId?: number | null;
}

async function requireParent(client: PoolClient, workspaceId: number, parentId: number) {
  const { rowCount } = await client.query(
    'SELECT 1 FROM collections WHERE workspace_id = $1 AND id = $2 FOR KEY SHARE',
    [workspaceId, parentId],
  );
  if (rowCount === 0) {
    throw new DomainError('parent_not_found', 'the parent collection does not exist');
  }
}

export async function createCollection(
  pool: Pool,
  actor: AuditActor,
  workspaceId: number,
  input: CollectionInput,
): Promise<Collection> {
  return withTransaction(pool, async (client) => {
    await lockTree(client, workspaceId);
    if (input.parentId != null) await requireParent(client, workspaceId, input.parentId);
    const { rows } = await client.query(
      `INSERT INTO collections AS c (workspace_id, parent_id, title, description, metadata,
                                     language, provider, model)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8) RETURNING ${COLUMNS}`,
      [
        workspaceId,
        input.parentId ?? null,
        input.title,
        input.description ?? null,
        JSON.stringify(input.metadata ?? []),
        input.language ?? null,
        input.provider ?? null,
        input.model ?? null,
      ],
    );
    const created = toCollection(rows[0]!);
    await recordAudit(client, actor, {
      action: 'collection.create',
      target: `collections/${created.id}`,
      workspaceId,
      before: null,
      after: auditView(created),
    });
    return created;
  });
}

export interface CollectionPatch extends EngineChoiceInput {
  title?: string;
  description?: string | null;
  metadata?: MetadataEntry[];
  /** null: to the workspace's root. */
  parentId?: number | null;
}

function auditView(c: Collection) {
  return {
    title: c.title,
    description: c.description,
    metadata: c.metadata,
    parentId: c.parentId,
    language: c.language,
    provider: c.provider,
    model: c.model,
  };
}

/**
 * Rename, describe or move a collection. A move under the collection itself or one of its
 * descendants is refused (`collection_cycle`, 409) and changes nothing.
 */
export async function updateCollection(
  pool: Pool,
  actor: AuditActor,
  workspaceId: number,
  id: number,
  patch: CollectionPatch,
): Promise<Collection> {
  return withTransaction(pool, async (client) => {
    if (patch.parentId !== undefined) await lockTree(client, workspaceId);
    const current = await client.query(
      `SELECT ${COLUMNS} FROM collections c WHERE c.workspace_id = $1 AND c.id = $2 FOR UPDATE`,
      [workspaceId, id],
    );
    if (!current.rows[0]) throw notFound();
    const before = toCollection(current.rows[0]);
    if (patch.parentId != null && patch.parentId !== before.parentId) {
      await requireParent(client, workspaceId, patch.parentId);
      const cycle = await client.query(
        `WITH RECURSIVE up AS (
           SELECT id, parent_id, 0 AS depth FROM collections WHERE workspace_id = $1 AND id = $2
           UNION ALL
           SELECT c.id, c.parent_id, up.depth + 1 FROM collections c JOIN up ON c.id = up.parent_id
            WHERE c.workspace_id = $1 AND up.depth < 10000)
         SELECT 1 FROM up WHERE id = $3 LIMIT 1`,
        [workspaceId, patch.parentId, id],
      );
      if (cycle.rowCount) {
        throw new ConflictError(
          'collection_cycle',
          'a collection cannot move under itself or one of its own sub-collections',
        );
      }
    }
    const { rows } = await client.query(
      `UPDATE collections c SET
          title = CASE WHEN $3 THEN $4 ELSE title END,
          description = CASE WHEN $5 THEN $6 ELSE description END,
          metadata = CASE WHEN $7 THEN $8::jsonb ELSE metadata END,
          parent_id = CASE WHEN $9 THEN $10::bigint ELSE parent_id END,
          language = CASE WHEN $11 THEN $12 ELSE c.language END,
          provider = CASE WHEN $13 THEN $14 ELSE c.provider END,
          model = CASE WHEN $15 THEN $16 ELSE c.model END,
          updated_at = now()
        WHERE c.workspace_id = $1 AND c.id = $2 RETURNING ${COLUMNS}`,
      [
        workspaceId,
        id,
        patch.title !== undefined,
        patch.title ?? null,
        patch.description !== undefined,
        patch.description ?? null,
        patch.metadata !== undefined,
        JSON.stringify(patch.metadata ?? []),
        patch.parentId !== undefined,
        patch.parentId ?? null,
        patch.language !== undefined,
        patch.language ?? null,
        patch.provider !== undefined,
        patch.provider ?? null,
        patch.model !== undefined,
        patch.model ?? null,
      ],
    );
    if (rows.length !== 1) throw new Error('collection changed while locked');
    const after = toCollection(rows[0]!);
    await recordAudit(client, actor, {
      action: 'collection.update',
      target: `collections/${id}`,
      workspaceId,
      before: auditView(before),
      after: auditView(after),
    });
    return after;
  });
}

/** Only an empty collection goes: no sub-collection, no live item (`collection_not_empty`). */
export async function deleteCollection(
  pool: Pool,
  actor: AuditActor,
  workspaceId: number,
  id: number,
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await lockTree(client, workspaceId);
    const current = await client.query(
      `SELECT ${COLUMNS} FROM collections c WHERE c.workspace_id = $1 AND c.id = $2 FOR UPDATE`,
      [workspaceId, id],
    );
    if (!current.rows[0]) throw notFound();
    // Statements of their own after the lock: an item moved in meanwhile has committed (its
    // foreign key check waited on our lock) and is seen here.
    const inside = await client.query(
      `SELECT (SELECT count(*) FROM collections WHERE workspace_id = $1 AND parent_id = $2)::int AS collections,
              (SELECT count(*) FROM items WHERE workspace_id = $1 AND collection_id = $2 AND deleted_at IS NULL)::int AS items`,
      [workspaceId, id],
    );
    const { collections, items } = inside.rows[0];
    if (collections > 0 || items > 0) {
      throw new DomainError(
        'collection_not_empty',
        'only an empty collection can be deleted: move or delete its items and sub-collections first',
        { collections, items },
      );
    }
    await client.query('DELETE FROM collections WHERE workspace_id = $1 AND id = $2', [
      workspaceId,
      id,
    ]);
    await recordAudit(client, actor, {
      action: 'collection.delete',
      target: `collections/${id}`,
      workspaceId,
      before: auditView(toCollection(current.rows[0])),
      after: null,
    });
  });
}

export interface IiifCollectionContent {
  collection: Collection;
  parentId: number | null;
  collections: Array<{ id: number; title: string }>;
  items: Array<{ id: string; title: string | null }>;
}

/**
 * F1/I1: what a IIIF Collection shows to a view. The workspace's own (`draft`) sees every
 * sub-collection and every item with a page. Anyone else sees only what leads to published
 * pages: items with one, sub-collections holding such an item somewhere below; a collection
 * with nothing published is not there for them (undefined, a 404).
 */
export async function iiifCollection(
  db: Queryable,
  workspaceId: number,
  id: number,
  view: IiifView,
): Promise<IiifCollectionContent | undefined> {
  const found = await db.query(
    `SELECT ${COLUMNS} FROM collections c WHERE c.workspace_id = $1 AND c.id = $2`,
    [workspaceId, id],
  );
  if (!found.rows[0]) return undefined;
  const collection = toCollection(found.rows[0]);
  // Each sub-collection (and the collection itself, as root 0) with whether anything visible
  // lies below it.
  const { rows } = await db.query(
    `WITH RECURSIVE tree AS (
       SELECT id, id AS top, 0 AS depth FROM collections WHERE workspace_id = $1 AND (id = $2 OR parent_id = $2)
       UNION ALL
       SELECT c.id, tree.top, tree.depth + 1 FROM collections c JOIN tree ON c.parent_id = tree.id
        WHERE c.workspace_id = $1 AND tree.top <> $2 AND tree.depth < 1000)
     SELECT t.top, c.title, c.parent_id,
            bool_or(EXISTS (SELECT 1 FROM items i JOIN pages p ON p.workspace_id = i.workspace_id AND p.item_id = i.id
                             WHERE i.workspace_id = $1 AND i.collection_id = t.id AND i.deleted_at IS NULL
                               AND p.deleted_at IS NULL AND ($3 = 'draft' OR p.published_revision IS NOT NULL))) AS visible
       FROM tree t JOIN collections c ON c.id = t.top
      GROUP BY t.top, c.title, c.parent_id, c.id ORDER BY c.id`,
    [workspaceId, id, view],
  );
  const items = await db.query(
    `SELECT i.id, i.title FROM items i
      WHERE i.workspace_id = $1 AND i.collection_id = $2 AND i.deleted_at IS NULL
        AND EXISTS (SELECT 1 FROM pages p WHERE p.workspace_id = i.workspace_id AND p.item_id = i.id
                     AND p.deleted_at IS NULL AND ($3 = 'draft' OR p.published_revision IS NOT NULL))
      ORDER BY i.id LIMIT 10000`,
    [workspaceId, id, view],
  );
  const subs = rows.filter((r) => Number(r.top) !== id && (view === 'draft' || r.visible));
  if (view === 'published' && subs.length === 0 && items.rows.length === 0) return undefined;
  return {
    collection,
    parentId: collection.parentId,
    collections: subs.map((r) => ({ id: Number(r.top), title: r.title })),
    items: items.rows.map((r) => ({ id: r.id, title: r.title ?? null })),
  };
}
