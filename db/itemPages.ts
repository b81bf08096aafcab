import { DomainError } from '../core/errors';
import { type AuditActor, recordAudit } from './auditLog';
import { ConflictError, NotFoundError } from './errors';
import { type Pool, type Queryable, withTransaction } from './pool';

/**
 * F2, F6: where an item's pages stand: their order, a page moved to another item in one
 * audited transaction (its review lines with it), and the items a page may be moved to.
 * Reading items themselves is db/items.ts.
 */

const itemNotFound = () => new NotFoundError('item_not_found', 'item not found');

/** An item a page can be moved to, as the page mover lists it. */
export interface MoveTarget {
  id: string;
  title: string | null;
}

/**
 * F6: the items a page of `fromItemId` can move to: those whose title or id contains
 * `search` (any case), else the most recently changed, newest first.
 */
export async function listMoveTargets(
  db: Queryable,
  workspaceId: number,
  options: { fromItemId: string; search?: string; limit: number },
): Promise<MoveTarget[]> {
  const search = options.search?.trim();
  const pattern = search ? `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const { rows } = await db.query<MoveTarget>(
    `SELECT id, title FROM items
      WHERE workspace_id = $1 AND deleted_at IS NULL AND id <> $2
        AND ($3::text IS NULL OR title ILIKE $3 OR id ILIKE $3)
      ORDER BY updated_at DESC, id LIMIT $4`,
    [workspaceId, options.fromItemId, pattern, options.limit],
  );
  return rows;
}

export interface ArrangedPages {
  itemId: string;
  pageIds: number[];
  /** Pages that came from other items, each with the item it left. */
  moved: Array<{ pageId: number; fromItemId: string }>;
}

/** Positions are moved out of the way first: (item, position) is unique and checked at once. */
const POSITION_SHIFT = 1 << 30;

/**
 * F2: sets the order of an item's pages in one transaction: `pageIds` is the item's every
 * live page in its new order, and may name pages of other items of the workspace, which move
 * here. The item is created when it does not exist yet (splitting an upload). A page keeps
 * its id, its canvas URI, its revisions, jobs and attempts: only its item and position change
 * (and its text-search configuration, to the new item's). Items that lost pages close their
 * gaps. Locks items first, then pages, each in a fixed order, as ingest and deletion do. The
 * audit row names the key and lists every item's order before and after.
 */
export async function arrangeItemPages(
  pool: Pool,
  actor: AuditActor,
  workspaceId: number,
  itemId: string,
  pageIds: number[],
): Promise<ArrangedPages> {
  if (new Set(pageIds).size !== pageIds.length) {
    throw new DomainError('duplicate_pages', 'a page is listed more than once');
  }
  return withTransaction(pool, async (client) => {
    const existing = await client.query<{ deleted: boolean }>(
      'SELECT deleted_at IS NOT NULL AS deleted FROM items WHERE workspace_id = $1 AND id = $2',
      [workspaceId, itemId],
    );
    if (existing.rows[0]?.deleted) {
      throw new ConflictError('item_deleted', `item ${itemId} was deleted`);
    }
    if (existing.rowCount === 0) {
      if (pageIds.length === 0) throw itemNotFound();
      await client.query(
        'INSERT INTO items (workspace_id, id) VALUES ($1, $2) ON CONFLICT (workspace_id, id) DO NOTHING',
        [workspaceId, itemId],
      );
    }
    const named = await client.query<{ id: string; item_id: string }>(
      `SELECT id::text, item_id FROM pages WHERE workspace_id = $1 AND id = ANY($2::bigint[]) AND deleted_at IS NULL`,
      [workspaceId, pageIds],
    );
    if (named.rowCount !== pageIds.length) {
      // Another workspace's page is just a page that is not there.
      throw new NotFoundError('page_not_found', 'a listed page does not exist in this workspace');
    }
    const items = [...new Set([itemId, ...named.rows.map((r) => r.item_id)])].sort();
    await client.query(
      `SELECT 1 FROM items WHERE workspace_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`,
      [workspaceId, items],
    );
    const locked = await client.query<{
      id: string;
      item_id: string;
      position: number;
      deleted: boolean;
    }>(
      `SELECT id::text, item_id, position, deleted_at IS NOT NULL AS deleted FROM pages
        WHERE workspace_id = $1 AND item_id = ANY($2) ORDER BY id FOR UPDATE`,
      [workspaceId, items],
    );
    const byItem = new Map<string, typeof locked.rows>();
    for (const row of locked.rows) {
      const list = byItem.get(row.item_id) ?? [];
      list.push(row);
      byItem.set(row.item_id, list);
    }
    for (const list of byItem.values()) list.sort((a, b) => a.position - b.position);
    const before = Object.fromEntries(
      items.map((id) => [
        id,
        (byItem.get(id) ?? []).filter((p) => !p.deleted).map((p) => Number(p.id)),
      ]),
    );
    // Read again under the locks: a page that moved meanwhile is seen where it is now.
    const listed = new Set(pageIds);
    const stillHere = locked.rows.filter((p) => !p.deleted && listed.has(Number(p.id)));
    if (stillHere.length !== pageIds.length) {
      throw new ConflictError('pages_changed', 'the listed pages changed meanwhile; read again');
    }
    const left = before[itemId]!.filter((id) => !listed.has(id));
    if (left.length > 0) {
      throw new DomainError(
        'pages_missing',
        "every live page of the item must be listed; move a page out by listing it in its new item's order",
        { pageIds: left },
      );
    }
    // The final order of every item touched: live pages first, tombstones after them.
    const order = new Map<string, number[]>();
    for (const id of items) {
      const rows = byItem.get(id) ?? [];
      const live =
        id === itemId
          ? pageIds
          : rows.filter((p) => !p.deleted && !listed.has(Number(p.id))).map((p) => Number(p.id));
      order.set(id, [...live, ...rows.filter((p) => p.deleted).map((p) => Number(p.id))]);
    }
    // Only the pages whose place changes are written: every write of a page row recomputes
    // its stored tsvector. Those move out of the way first; the others already hold their
    // final places, which no moved page can take.
    const placeOf = new Map(
      locked.rows.map((p) => [Number(p.id), `${p.item_id}\u0000${p.position}`]),
    );
    const ids: number[] = [];
    const targets: string[] = [];
    const positions: number[] = [];
    for (const [id, list] of order) {
      list.forEach((pageId, position) => {
        if (placeOf.get(pageId) === `${id}\u0000${position}`) return;
        ids.push(pageId);
        targets.push(id);
        positions.push(position);
      });
    }
    await client.query(
      `UPDATE pages SET position = position + ${POSITION_SHIFT} WHERE id = ANY($1::bigint[])`,
      [ids],
    );
    const moved = await client.query(
      `UPDATE pages p SET item_id = v.item_id, position = v.position,
              search_config = CASE WHEN p.item_id = v.item_id THEN p.search_config ELSE i.search_config END,
              updated_at = now()
         FROM unnest($2::bigint[], $3::text[], $4::int[]) AS v(id, item_id, position), items i
        WHERE p.id = v.id AND p.workspace_id = $1 AND i.workspace_id = $1 AND i.id = v.item_id`,
      [workspaceId, ids, targets, positions],
    );
    if (moved.rowCount !== ids.length) throw new Error('a page changed while locked');
    // F6: a page's lines carry its item for the review queue and progress; they follow it in
    // the same transaction, so every count sees the page where it now is.
    await client.query(
      `UPDATE page_lines l SET item_id = p.item_id
         FROM pages p
        WHERE p.workspace_id = $1 AND p.id = ANY($2::bigint[]) AND l.page_id = p.id
          AND l.item_id <> p.item_id`,
      [workspaceId, ids],
    );
    const tombstones = new Set(locked.rows.filter((r) => r.deleted).map((r) => Number(r.id)));
    const after = Object.fromEntries(
      items.map((id) => [id, order.get(id)!.filter((p) => !tombstones.has(p))]),
    );
    const movedPages = named.rows
      .filter((r) => r.item_id !== itemId)
      .map((r) => ({ pageId: Number(r.id), fromItemId: r.item_id }));
    await client.query(
      'UPDATE items SET updated_at = now() WHERE workspace_id = $1 AND id = ANY($2)',
      [workspaceId, items],
    );
    await recordAudit(client, actor, {
      action: 'item.pages',
      target: `items/${itemId}`,
      workspaceId,
      before,
      after: { ...after, moved: movedPages },
    });
    return { itemId, pageIds, moved: movedPages };
  });
}
