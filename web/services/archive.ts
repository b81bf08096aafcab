import 'server-only';
import { DomainError } from '@quire/core/errors';
import { decodePageToken, encodePageToken, PageTokenError } from '@quire/core/pageToken';
import {
  type Collection,
  type CollectionInput,
  type CollectionPatch,
  createCollection as createCollectionRow,
  deleteCollection as deleteCollectionRow,
  getCollection,
  listCollections,
  updateCollection as updateCollectionRow,
} from '@quire/db/collections';
import { NotFoundError } from '@quire/db/errors';
import { type ArrangedPages, arrangeItemPages } from '@quire/db/itemPages';
import {
  getItem,
  type ItemPatch,
  type ItemScope,
  type ItemSummary,
  listItems,
  updateItem as updateItemRow,
} from '@quire/db/items';
import { type SearchFilter, type SearchHit, searchArchive } from '@quire/db/search';
import type { Principal } from '@quire/db/workspaces';
import { itemIdRefusal } from '@quire/ingest/request';
import { config, pool } from '@quire/web/lib/server';
import { actorOf, requireAction } from './access';

/**
 * F1-F3: the archive's use cases, for the API and the console alike. Each change goes through
 * the one db writer that records it in the audit log with the principal's key.
 */

export function createCollection(principal: Principal, input: CollectionInput) {
  requireAction(principal, 'collection.create');
  return createCollectionRow(pool(), actorOf(principal), principal.workspaceId, input);
}

export function updateCollection(principal: Principal, id: number, patch: CollectionPatch) {
  requireAction(principal, 'collection.update');
  return updateCollectionRow(pool(), actorOf(principal), principal.workspaceId, id, patch);
}

export function deleteCollection(principal: Principal, id: number): Promise<void> {
  requireAction(principal, 'collection.delete');
  return deleteCollectionRow(pool(), actorOf(principal), principal.workspaceId, id);
}

export function updateItem(principal: Principal, itemId: string, patch: ItemPatch) {
  requireAction(principal, 'item.update');
  return updateItemRow(pool(), actorOf(principal), principal.workspaceId, itemId, patch);
}

export function arrangePages(
  principal: Principal,
  itemId: string,
  pageIds: number[],
): Promise<ArrangedPages> {
  requireAction(principal, 'item.arrange');
  // The item is created when new (F2): it takes only an id an upload could have given it (R6).
  const refused = itemIdRefusal(itemId);
  if (refused) return Promise.reject(new DomainError('invalid_item_id', refused));
  return arrangeItemPages(pool(), actorOf(principal), principal.workspaceId, itemId, pageIds);
}

export async function requireCollection(principal: Principal, id: number) {
  const found = await getCollection(pool(), principal.workspaceId, id);
  if (!found) throw new NotFoundError('collection_not_found', 'collection not found');
  return found;
}

export async function requireItem(principal: Principal, itemId: string): Promise<ItemSummary> {
  const found = await getItem(pool(), principal.workspaceId, itemId);
  if (!found) throw new NotFoundError('item_not_found', 'item not found');
  return found;
}

/** L1: one page of sub-collections, with the signed token of the next. */
export async function collectionPage(
  principal: Principal,
  query: { parentId?: number; pageSize: number; pageToken?: string },
): Promise<{ collections: Collection[]; nextPageToken: string | null }> {
  const binding = {
    workspaceId: principal.workspaceId,
    scope: 'collections',
    filter: { parentId: query.parentId ?? null },
  };
  const secret = config().QUIRE_SECRET_KEY;
  let afterId: number | undefined;
  if (query.pageToken !== undefined) {
    const cursor = decodePageToken(secret, binding, query.pageToken);
    if (!Number.isSafeInteger(cursor) || (cursor as number) <= 0) {
      throw new PageTokenError('page token is malformed');
    }
    afterId = cursor as number;
  }
  const rows = await listCollections(pool(), principal.workspaceId, {
    parentId: query.parentId ?? null,
    afterId,
    limit: query.pageSize + 1,
  });
  const collections = rows.slice(0, query.pageSize);
  const last = collections[collections.length - 1];
  return {
    collections,
    nextPageToken:
      rows.length > query.pageSize && last ? encodePageToken(secret, binding, last.id) : null,
  };
}

/** F2/L1: one page of items in a scope, by id, with the signed token of the next. */
export async function itemPage(
  principal: Principal,
  query: { collection?: 'root' | number; pageSize: number; pageToken?: string },
): Promise<{ items: ItemSummary[]; nextPageToken: string | null }> {
  const scope: ItemScope =
    query.collection === undefined
      ? { kind: 'all' }
      : query.collection === 'root'
        ? { kind: 'root' }
        : { kind: 'collection', id: query.collection };
  if (scope.kind === 'collection') await requireCollection(principal, scope.id);
  const binding = {
    workspaceId: principal.workspaceId,
    scope: 'items',
    filter: { collection: query.collection === undefined ? null : String(query.collection) },
  };
  const secret = config().QUIRE_SECRET_KEY;
  let afterId: string | undefined;
  if (query.pageToken !== undefined) {
    const cursor = decodePageToken(secret, binding, query.pageToken);
    if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 200) {
      throw new PageTokenError('page token is malformed');
    }
    afterId = cursor;
  }
  const rows = await listItems(pool(), principal.workspaceId, {
    scope,
    afterId,
    limit: query.pageSize + 1,
  });
  const items = rows.slice(0, query.pageSize);
  const last = items[items.length - 1];
  return {
    items,
    nextPageToken:
      rows.length > query.pageSize && last ? encodePageToken(secret, binding, last.id) : null,
  };
}

/** F3: a collection filter naming another workspace's collection finds nothing (404). */
export async function search(principal: Principal, filter: SearchFilter): Promise<SearchHit[]> {
  if (filter.collectionId !== undefined) await requireCollection(principal, filter.collectionId);
  return searchArchive(pool(), principal.workspaceId, filter);
}
