import {
  arrangePagesBody,
  createCollectionBody,
  iiifImportBody,
  listCollectionsQuery,
  listItemsQuery,
  updateCollectionBody,
  updateItemBody,
} from './archiveSchemas';
import type { Operation } from './openapiOperation';
import { errorBody } from './schemas';

/** F1/F2: the archive's routes in the OpenAPI document: collections, items, page order. */
const errors = (codes: number[]) =>
  Object.fromEntries(
    codes.map((c) => [String(c), { description: TEXT[c] ?? 'error', schema: errorBody }]),
  );
const TEXT: Record<number, string> = {
  400: 'malformed JSON, parameters or page token',
  401: 'missing or invalid API key',
  404: 'not found in this workspace',
  409: 'conflict: `collection_cycle`, `collection_not_empty`, `item_deleted`, `pages_changed`',
  415: 'body is not application/json',
  422: 'well-formed but not acceptable: `parent_not_found`, `collection_not_found`, `pages_missing`, `duplicate_pages`',
};
const ws = '/workspaces/{ws}';

export const ARCHIVE_OPERATIONS: Operation[] = [
  {
    method: 'get',
    path: `${ws}/collections`,
    summary:
      "One level of the collection tree (the root, or a parent's children), keyset-paged (F1, L1)",
    tag: 'archive',
    query: listCollectionsQuery,
    responses: {
      '200': { description: '{collections, nextPageToken}' },
      ...errors([400, 401, 404]),
    },
  },
  {
    method: 'post',
    path: `${ws}/collections`,
    summary: 'Create a collection, at the root or under a parent; audited (F1, M4)',
    tag: 'archive',
    body: createCollectionBody,
    responses: { '201': { description: 'collection' }, ...errors([400, 401, 404, 415, 422]) },
  },
  {
    method: 'get',
    path: `${ws}/collections/{collectionId}`,
    summary: 'A collection with its counts and the path of its ancestors (F1)',
    tag: 'archive',
    responses: { '200': { description: 'collection' }, ...errors([400, 401, 404]) },
  },
  {
    method: 'patch',
    path: `${ws}/collections/{collectionId}`,
    summary:
      'Rename, describe or move a collection; never under itself (409 collection_cycle) (F1)',
    tag: 'archive',
    body: updateCollectionBody,
    responses: { '200': { description: 'collection' }, ...errors([400, 401, 404, 409, 415, 422]) },
  },
  {
    method: 'delete',
    path: `${ws}/collections/{collectionId}`,
    summary: 'Delete an empty collection (409 collection_not_empty otherwise) (F1)',
    tag: 'archive',
    responses: { '200': { description: '{id, deleted}' }, ...errors([400, 401, 404, 409]) },
  },
  {
    method: 'get',
    path: `${ws}/items`,
    summary:
      'Items by id, keyset-paged, with page and transcribed-page counts; by collection or root (F2, L1)',
    tag: 'items',
    query: listItemsQuery,
    responses: { '200': { description: '{items, nextPageToken}' }, ...errors([400, 401, 404]) },
  },
  {
    method: 'get',
    path: `${ws}/items/{itemId}`,
    summary: 'An item: title, metadata, language, collection and its pages in order (F2)',
    tag: 'items',
    responses: { '200': { description: 'item' }, ...errors([401, 404]) },
  },
  {
    method: 'patch',
    path: `${ws}/items/{itemId}`,
    summary: 'Set an item’s title, metadata, language or collection; audited (F2, M4)',
    tag: 'items',
    body: updateItemBody,
    responses: { '200': { description: 'item' }, ...errors([400, 401, 404, 415, 422]) },
  },
  {
    method: 'post',
    path: `${ws}/iiif-imports`,
    summary:
      "F8: import an item from a IIIF Presentation 2 or 3 manifest URL: its canvases become pages in order (images through the manifest's Image API service, the longest side at most QUIRE_IIIF_IMAGE_MAX_SIDE, or the painted image), its label and metadata the item's title and metadata, its text annotations or ALTO/PAGE/hOCR seeAlso files revision 1 with the imported line state; pages without one get a job. Every fetch under the SSRF rules, bounded in bytes and time. Refused, storing nothing, with iiif_invalid_url, iiif_forbidden_target (a private or loopback address), iiif_not_json, iiif_not_manifest, iiif_too_large, iiif_too_many_canvases, iiif_fetch_failed, iiif_no_image or iiif_transcription_invalid. Needs the upload permission; audited as item.import_iiif.",
    tag: 'items',
    body: iiifImportBody,
    responses: {
      '201': {
        description:
          '{itemId, batchId, pages:[{pageId,itemId,canvasUri,jobId}], files, manifest:{version, canvases, transcribed}}',
      },
      ...errors([400, 401, 404, 413, 415, 422]),
    },
  },
  {
    method: 'put',
    path: `${ws}/items/{itemId}/pages`,
    summary:
      "Set the order of an item's pages, moving in pages of other items, in one audited transaction; pages keep their ids, canvas URIs, revisions and jobs (F2)",
    tag: 'items',
    body: arrangePagesBody,
    responses: {
      '200': { description: '{itemId, moved, pageList}' },
      ...errors([400, 401, 404, 409, 415, 422]),
    },
  },
];
