/**
 * I1: the IIIF Presentation 3 manifest of an item. One canvas per page, its id the canvas URI
 * the page already carries; the page's image (or recording) as the `painting` body; the
 * transcript as an embedded `AnnotationPage` of `supplementing` annotations targeting
 * `#xywh=` line boxes or `#t=` time ranges. I4: an image body names the page's Image API
 * service (deep-zoom viewers read tiles from it) and the canvas carries a thumbnail from it;
 * a master browsers cannot draw (TIFF) is painted as a JPEG from the service instead. Pure.
 */

import { type ActorNames, actorDisplay, actorOfLineAuthor, actorView } from '../actor';
import type { AnnotationPage, LineAuthor } from '../annotation';
import type { MediaKind } from '../media';
import { fullImageUriFor, imageServiceReference, thumbnailOf } from './imageApi';

/** Masters a browser draws as they are; any other image is painted through the Image API. */
const BROWSER_IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif']);

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
  /** I4: the page's Image API service (`/iiif/{ws}/image/{pageId}`); null for audio. */
  imageServiceUri?: string | null;
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
  /**
   * R7: the names of the accounts and keys behind the lines' stamps (db/actors.ts), so an
   * annotation a person edited or verified names them as its `creator`.
   */
  names?: ActorNames;
}

type LanguageMap = Record<string, string[]>;

const label = (value: string): LanguageMap => ({ none: [value] });

/** The manifest's URI for an item: beside its canvases (`/iiif/{ws}/{item}/manifest`). */
export function manifestUriFor(baseUrl: string, workspaceId: number, itemId: string): string {
  return `${baseUrl.replace(/\/$/, '')}/iiif/${workspaceId}/${encodeURIComponent(itemId)}/manifest`;
}

/**
 * R7: the person (or API key) who last edited or verified a line, as a Web Annotation
 * `creator`: by name, with the account or key id kept beneath in its id
 * (`urn:quire:account:7`). Lines an engine or an import wrote name no creator here.
 */
export function annotationCreator(
  by: LineAuthor | undefined,
  names: ActorNames,
): { id: string; type: 'Person' | 'Software'; name: string } | undefined {
  if (!by || (by.kind !== 'account' && by.kind !== 'api-key')) return undefined;
  const display = actorDisplay(actorView(actorOfLineAuthor(by), names));
  if (!display.ref) return undefined;
  return {
    id: `urn:quire:${by.kind}:${by.id}`,
    type: by.kind === 'account' ? 'Person' : 'Software',
    name: display.name,
  };
}

function canvasOf(page: ManifestPage, ordinal: number, names: ActorNames) {
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
    const service = page.kind === 'image' ? (page.imageServiceUri ?? null) : null;
    const drawable = page.mediaType !== null && BROWSER_IMAGE_TYPES.has(page.mediaType);
    const body: Record<string, unknown> =
      service && !drawable
        ? { id: fullImageUriFor(service), type: 'Image', format: 'image/jpeg' }
        : {
            id: page.mediaUrl,
            type: page.kind === 'audio' ? 'Sound' : 'Image',
            ...(page.mediaType ? { format: page.mediaType } : {}),
          };
    if (page.kind === 'image') {
      body.width = canvas.width;
      body.height = canvas.height;
      if (service) {
        body.service = imageServiceReference(service);
        const size = { width: canvas.width as number, height: canvas.height as number };
        canvas.thumbnail = [
          {
            ...thumbnailOf(service, size),
            type: 'Image',
            format: 'image/jpeg',
            service: imageServiceReference(service),
          },
        ];
      }
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
        items: page.annotationPage.items.map((a) => {
          const creator = annotationCreator(a['quire:stateBy'], names);
          return {
            id: a.id,
            type: 'Annotation',
            motivation: 'supplementing',
            ...(creator ? { creator } : {}),
            body: a.body,
            target: a.target,
          };
        }),
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
    items: pages.map((page, i) => canvasOf(page, i, input.names ?? new Map())),
  };
}
