import 'server-only';
import { collectionUriFor } from '@quire/core/interchange/collection';
import { manifestUriFor } from '@quire/core/interchange/manifest';
import type { Collection, CollectionSummary } from '@quire/db/collections';
import type { ItemPage, ItemSummary } from '@quire/db/items';
import { config } from './server';

/** F1/F2: the JSON shape of collections, items and their pages in `/api/v1`. */

const base = () => config().QUIRE_PUBLIC_URL;

export function collectionJson(c: Collection | CollectionSummary) {
  return {
    id: c.id,
    parentId: c.parentId,
    title: c.title,
    description: c.description,
    metadata: c.metadata,
    language: c.language,
    provider: c.provider,
    model: c.model,
    ...('items' in c ? { collections: c.collections, items: c.items } : {}),
    iiifCollection: collectionUriFor(base(), c.workspaceId, c.id),
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

export function itemJson(workspaceId: number, item: ItemSummary) {
  return {
    id: item.id,
    title: item.title,
    collectionId: item.collectionId,
    language: item.language,
    provider: item.provider,
    model: item.model,
    metadata: item.metadata,
    pages: item.pages,
    transcribedPages: item.transcribedPages,
    manifest: manifestUriFor(base(), workspaceId, item.id),
    createdAt: item.createdAt.toISOString(),
    updatedAt: item.updatedAt.toISOString(),
  };
}

/** A page in its item's order; the thumbnail is the page's own image until an image service lands. */
export function itemPageJson(page: ItemPage) {
  return {
    pageId: page.pageId,
    position: page.position,
    kind: page.kind,
    canvasUri: page.canvasUri,
    revision: page.revision,
    lines: page.lines,
    width: page.width,
    height: page.height,
    durationMs: page.durationMs,
    thumbnail: page.hasMedia && page.kind === 'image' ? `${page.canvasUri}/media` : null,
  };
}
