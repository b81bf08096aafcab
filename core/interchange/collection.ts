/**
 * F1: the IIIF Presentation 3 `Collection` of a Quire collection: its sub-collections and the
 * manifests of its items, in order, with its title, description and metadata. Pure.
 */
import type { MetadataEntry } from '../archive';
import { manifestUriFor, PRESENTATION_3_CONTEXT } from './manifest';

/** A collection's URI (`/iiif/{ws}/collection/{id}`), beside the item manifests. */
export function collectionUriFor(baseUrl: string, workspaceId: number, id: number): string {
  return `${baseUrl.replace(/\/$/, '')}/iiif/${workspaceId}/collection/${id}`;
}

export interface CollectionInput {
  baseUrl: string;
  workspaceId: number;
  id: number;
  title: string;
  description: string | null;
  metadata: readonly MetadataEntry[];
  parentId: number | null;
  collections: ReadonlyArray<{ id: number; title: string }>;
  items: ReadonlyArray<{ id: string; title: string | null }>;
}

const label = (value: string) => ({ none: [value] });

export function iiifMetadata(entries: readonly MetadataEntry[]) {
  return entries.map((e) => ({ label: label(e.label), value: label(e.value) }));
}

export function buildCollection(input: CollectionInput) {
  const uri = (id: number) => collectionUriFor(input.baseUrl, input.workspaceId, id);
  return {
    '@context': PRESENTATION_3_CONTEXT,
    id: uri(input.id),
    type: 'Collection',
    label: label(input.title),
    ...(input.description ? { summary: label(input.description) } : {}),
    ...(input.metadata.length > 0 ? { metadata: iiifMetadata(input.metadata) } : {}),
    ...(input.parentId !== null
      ? { partOf: [{ id: uri(input.parentId), type: 'Collection' }] }
      : {}),
    items: [
      ...input.collections.map((c) => ({
        id: uri(c.id),
        type: 'Collection',
        label: label(c.title),
      })),
      ...input.items.map((i) => ({
        id: manifestUriFor(input.baseUrl, input.workspaceId, i.id),
        type: 'Manifest',
        label: label(i.title ?? i.id),
      })),
    ],
  };
}
