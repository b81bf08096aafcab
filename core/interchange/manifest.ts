/**
 * I1: the IIIF Presentation 3 manifest of an item. One canvas per page, its id the canvas URI
 * the page already carries; the page's image (or recording) as a plain `painting` body (no
 * Image API service: Quire serves whole files, which level-0 viewers show as they are); the
 * transcript as an embedded `AnnotationPage` of `supplementing` annotations targeting
 * `#xywh=` line boxes or `#t=` time ranges. Pure.
 */

import type { AnnotationPage } from '../annotation';
import type { MediaKind } from '../media';

export const PRESENTATION_3_CONTEXT = 'http://iiif.io/api/presentation/3/context.json';

export interface ManifestPage {
  position: number;
  kind: MediaKind;
  canvasUri: string;
  width: number | null;
  height: number | null;
  durationMs: number | null;
  /** Where the page's media is served; null when Quire no longer holds it (released audio). */
  mediaUrl: string | null;
  mediaType: string | null;
  /** The transcript shown: the current revision, or the published snapshot for the public. */
  annotationPage: AnnotationPage | null;
}

export interface ManifestInput {
  manifestUri: string;
  itemId: string;
  title: string | null;
  /** F2: the item's descriptive metadata, label/value pairs in order. */
  metadata?: ReadonlyArray<{ label: string; value: string }>;
  /** F1: the collection the item is in, as its URI. */
  partOf?: string | null;
  pages: readonly ManifestPage[];
}

type LanguageMap = Record<string, string[]>;

const label = (value: string): LanguageMap => ({ none: [value] });

/** The manifest's URI for an item: beside its canvases (`/iiif/{ws}/{item}/manifest`). */
export function manifestUriFor(baseUrl: string, workspaceId: number, itemId: string): string {
  return `${baseUrl.replace(/\/$/, '')}/iiif/${workspaceId}/${encodeURIComponent(itemId)}/manifest`;
}

function canvasOf(page: ManifestPage, ordinal: number) {
  const canvas: Record<string, unknown> = {
    id: page.canvasUri,
    type: 'Canvas',
    label: label(`${page.kind === 'audio' ? 'Recording' : 'Page'} ${ordinal + 1}`),
  };
  if (page.kind === 'image') {
    canvas.width = page.width ?? 1;
    canvas.height = page.height ?? 1;
  } else {
    canvas.duration = Math.max(0.001, (page.durationMs ?? 0) / 1000);
  }
  const painting: Record<string, unknown>[] = [];
  if (page.mediaUrl) {
    const body: Record<string, unknown> = {
      id: page.mediaUrl,
      type: page.kind === 'audio' ? 'Sound' : 'Image',
      ...(page.mediaType ? { format: page.mediaType } : {}),
    };
    if (page.kind === 'image') {
      body.width = canvas.width;
      body.height = canvas.height;
    } else {
      body.duration = canvas.duration;
    }
    painting.push({
      id: `${page.canvasUri}/painting/media`,
      type: 'Annotation',
      motivation: 'painting',
      body,
      target: page.canvasUri,
    });
  }
  canvas.items = [{ id: `${page.canvasUri}/painting`, type: 'AnnotationPage', items: painting }];
  if (page.annotationPage && page.annotationPage.items.length > 0) {
    // Embedded, without its own @context (the manifest's applies); quire:* extension keys
    // stay out so generic clients see plain Web Annotations.
    canvas.annotations = [
      {
        id: page.annotationPage.id,
        type: 'AnnotationPage',
        items: page.annotationPage.items.map((a) => ({
          id: a.id,
          type: 'Annotation',
          motivation: 'supplementing',
          body: a.body,
          target: a.target,
        })),
      },
    ];
  }
  return canvas;
}

export function buildManifest(input: ManifestInput) {
  const pages = [...input.pages].sort((a, b) => a.position - b.position);
  return {
    '@context': PRESENTATION_3_CONTEXT,
    id: input.manifestUri,
    type: 'Manifest',
    label: label(input.title ?? input.itemId),
    ...(input.metadata && input.metadata.length > 0
      ? {
          metadata: input.metadata.map((e) => ({ label: label(e.label), value: label(e.value) })),
        }
      : {}),
    ...(input.partOf ? { partOf: [{ id: input.partOf, type: 'Collection' }] } : {}),
    items: pages.map(canvasOf),
  };
}
