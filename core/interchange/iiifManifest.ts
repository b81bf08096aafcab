/**
 * F8: reading a IIIF Presentation 2 or 3 manifest into what an import needs: its label and
 * metadata, and per canvas (in order) its size, the image painted on it with the Image API
 * service that serves it, the transcriptions it names (`seeAlso` files: ALTO, PAGE, hOCR) and
 * its annotation pages (v3 `annotations`, v2 `otherContent`), embedded or by URL. Also the
 * text annotations of such a page as line segments in the canvas's space, and the Image API
 * URL of an image at a stated size. Pure; every refusal is a `DomainError` with a stable code
 * whose message never quotes the manifest.
 */

import type { Box, Segment } from '../annotation';
import { METADATA_LIMITS, type MetadataEntry } from '../archive';
import { DomainError } from '../errors';
import { oneLine } from './transcriptParts';

export interface ImageService {
  id: string;
  version: 2 | 3;
  /** Compliance level (0, 1 or 2); 0 when the service does not say. */
  level: number;
}

export interface PlannedCanvas {
  id: string;
  width: number;
  height: number;
  /** The painted image resource. */
  image: { url: string | null; width: number | null; height: number | null };
  service: ImageService | null;
  /** Transcription files the canvas (or its image) names with `seeAlso`. */
  seeAlso: string[];
  /** Annotation pages: a URL to fetch, or the page itself when embedded. */
  annotationPages: Array<{ url: string } | { page: unknown }>;
}

export interface PlannedManifest {
  version: 2 | 3;
  id: string;
  label: string | null;
  metadata: MetadataEntry[];
  canvases: PlannedCanvas[];
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const asArray = (v: unknown): unknown[] =>
  v === undefined || v === null ? [] : Array.isArray(v) ? v : [v];
const idOf = (v: unknown): string | null => {
  if (typeof v === 'string') return v;
  if (!isObject(v)) return null;
  const id = v.id ?? v['@id'];
  return typeof id === 'string' ? id : null;
};
const typeOf = (v: Json): string => String(v.type ?? v['@type'] ?? '');
const positive = (v: unknown): number | null => {
  const n = Number(v);
  return Number.isInteger(n) && n > 0 && n <= 1_000_000 ? n : null;
};

function contexts(doc: Json): string[] {
  return asArray(doc['@context']).filter((c): c is string => typeof c === 'string');
}

/** Which Presentation version `doc` is, or `iiif_not_manifest`. */
function versionOf(doc: Json): 2 | 3 {
  const ctx = contexts(doc);
  if (ctx.includes('http://iiif.io/api/presentation/3/context.json') && doc.type === 'Manifest')
    return 3;
  if (
    ctx.includes('http://iiif.io/api/presentation/2/context.json') &&
    doc['@type'] === 'sc:Manifest'
  )
    return 2;
  throw new DomainError(
    'iiif_not_manifest',
    'the document is not a IIIF Presentation 2 or 3 manifest (its @context and type say otherwise)',
  );
}

/** Text of a v3 language map or a v2 string / `{@value}` / array of them; HTML tags dropped. */
export function textOf(value: unknown, max: number): string | null {
  const parts: string[] = [];
  const visit = (v: unknown) => {
    if (typeof v === 'string') parts.push(v);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (isObject(v)) {
      if (typeof v['@value'] === 'string') parts.push(v['@value']);
      else {
        // A v3 language map: English first, then `none`, then any other.
        const keys = Object.keys(v).sort((a, b) => rank(a) - rank(b));
        const first = keys[0];
        if (first !== undefined) visit(v[first]);
      }
    }
  };
  visit(value);
  const text = oneLine(parts.join('; ').replace(/<[^>]*>/g, ' '));
  return text === '' ? null : text.slice(0, max);
}

const rank = (lang: string) => (lang === 'en' ? 0 : lang === 'none' ? 1 : 2);

function metadataOf(doc: Json): MetadataEntry[] {
  const entries: MetadataEntry[] = [];
  for (const entry of asArray(doc.metadata)) {
    if (!isObject(entry)) continue;
    const label = textOf(entry.label, METADATA_LIMITS.label);
    const value = textOf(entry.value, METADATA_LIMITS.value);
    if (label && value) entries.push({ label, value });
    if (entries.length >= METADATA_LIMITS.entries) break;
  }
  return entries;
}

function serviceOf(resource: Json): ImageService | null {
  for (const s of asArray(resource.service)) {
    if (!isObject(s)) continue;
    const id = idOf(s);
    if (!id) continue;
    const type = typeOf(s);
    const profile = asArray(s.profile)
      .filter((p): p is string => typeof p === 'string')
      .join(' ');
    const ctx = contexts(s).join(' ');
    const version: 2 | 3 | null =
      type === 'ImageService3' || ctx.includes('image/3')
        ? 3
        : type === 'ImageService2' || ctx.includes('image/2') || profile.includes('image/2')
          ? 2
          : null;
    if (!version) continue;
    const level = /level2/.test(profile) ? 2 : /level1/.test(profile) ? 1 : 0;
    return { id: id.replace(/\/+$/, ''), version, level };
  }
  return null;
}

function seeAlsoOf(...resources: Json[]): string[] {
  const urls: string[] = [];
  for (const r of resources) {
    for (const s of asArray(r.seeAlso)) {
      const id = idOf(s);
      // A file said to be something else (JSON, MARC, an HTML page of the catalogue) is no
      // transcription; ALTO, PAGE and hOCR are XML or XHTML.
      const format = isObject(s) && typeof s.format === 'string' ? s.format.toLowerCase() : '';
      const profile = isObject(s) ? JSON.stringify(s.profile ?? '').toLowerCase() : '';
      const transcription =
        /alto|page|hocr/.test(profile) || format === '' || /xml|xhtml/.test(format);
      if (id && transcription && !urls.includes(id)) urls.push(id);
    }
  }
  return urls;
}

function pagesOf(list: unknown): PlannedCanvas['annotationPages'] {
  return asArray(list).flatMap((p): PlannedCanvas['annotationPages'] => {
    if (isObject(p) && (Array.isArray(p.items) || Array.isArray(p.resources))) return [{ page: p }];
    const url = idOf(p);
    return url ? [{ url }] : [];
  });
}

function canvasOf(
  canvas: Json,
  image: Json | undefined,
  pages: unknown,
  index: number,
): PlannedCanvas {
  const width = positive(canvas.width);
  const height = positive(canvas.height);
  const id = idOf(canvas);
  if (!id || !width || !height) {
    throw new DomainError('iiif_not_manifest', `canvas ${index + 1} has no id, width or height`);
  }
  return {
    id,
    width,
    height,
    image: {
      url: image ? idOf(image) : null,
      width: image ? positive(image.width) : null,
      height: image ? positive(image.height) : null,
    },
    service: image ? serviceOf(image) : null,
    seeAlso: seeAlsoOf(canvas, ...(image ? [image] : [])),
    annotationPages: pagesOf(pages),
  };
}

/** The painted image of a v3 canvas: the body of its first painting annotation. */
function paintedV3(canvas: Json): Json | undefined {
  for (const page of asArray(canvas.items)) {
    if (!isObject(page)) continue;
    for (const anno of asArray(page.items)) {
      if (!isObject(anno) || anno.motivation !== 'painting') continue;
      for (const body of asArray(anno.body)) {
        if (!isObject(body)) continue;
        if (typeOf(body) === 'Image') return body;
        // A Choice of images: the first is the default.
        if (typeOf(body) === 'Choice') {
          const first = asArray(body.items).find((b) => isObject(b) && typeOf(b) === 'Image');
          if (isObject(first)) return first;
        }
      }
    }
  }
  return undefined;
}

export interface ManifestLimits {
  maxCanvases: number;
}

/** Reads a fetched manifest's bytes; `iiif_not_json`, `iiif_not_manifest`, `iiif_too_many_canvases`. */
export function readManifest(bytes: Uint8Array, limits: ManifestLimits): PlannedManifest {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new DomainError('iiif_not_json', 'the URL does not answer a JSON document');
  }
  if (!isObject(doc))
    throw new DomainError('iiif_not_manifest', 'the document is not a JSON object');
  const version = versionOf(doc);
  const id = idOf(doc) ?? '';
  const raw: Json[] =
    version === 3
      ? asArray(doc.items).filter(isObject)
      : asArray(asArray(doc.sequences).find(isObject)?.canvases).filter(isObject);
  if (raw.length === 0) throw new DomainError('iiif_not_manifest', 'the manifest has no canvases');
  if (raw.length > limits.maxCanvases) {
    throw new DomainError(
      'iiif_too_many_canvases',
      `the manifest has ${raw.length} canvases; an import takes at most ${limits.maxCanvases}`,
    );
  }
  const canvases = raw.map((canvas, i) => {
    if (version === 3) {
      if (typeOf(canvas) !== 'Canvas') {
        throw new DomainError('iiif_not_manifest', `item ${i + 1} of the manifest is not a Canvas`);
      }
      return canvasOf(canvas, paintedV3(canvas), canvas.annotations, i);
    }
    const image = asArray(canvas.images).find(isObject);
    const resource = image && isObject(image.resource) ? image.resource : undefined;
    return canvasOf(canvas, resource, canvas.otherContent, i);
  });
  return {
    version,
    id,
    label: textOf(doc.label, 500),
    metadata: metadataOf(doc),
    canvases,
  };
}

/**
 * The Image API URL of the whole image, its longest side at most `maxSide`. A service of level
 * 1 or 2 scales for us (`!w,h`); a level-0 service serves its full size (v3 `max`, v2 `full`)
 * and the sizes its info.json lists, so the caller passes those (`sizes`) when the full size
 * is too large. Returns the URL and the pixel size it states, or undefined when no size fits.
 */
export function imageRequest(
  service: ImageService,
  full: { width: number; height: number },
  maxSide: number,
  sizes: Array<{ width: number; height: number }> = [],
): { url: string; width: number; height: number } | undefined {
  const scale = Math.min(1, maxSide / Math.max(full.width, full.height));
  if (scale === 1) {
    return {
      url: `${service.id}/full/${service.version === 3 ? 'max' : 'full'}/0/default.jpg`,
      width: full.width,
      height: full.height,
    };
  }
  if (service.level >= 1) {
    const width = Math.max(1, Math.floor(full.width * scale));
    const height = Math.max(1, Math.floor(full.height * scale));
    return { url: `${service.id}/full/!${maxSide},${maxSide}/0/default.jpg`, width, height };
  }
  const fitting = sizes
    .filter((s) => s.width <= maxSide && s.height <= maxSide)
    .sort((a, b) => b.width * b.height - a.width * a.height)[0];
  if (!fitting) return undefined;
  const size = service.version === 3 ? `${fitting.width},${fitting.height}` : `${fitting.width},`;
  return {
    url: `${service.id}/full/${size}/0/default.jpg`,
    width: fitting.width,
    height: fitting.height,
  };
}

/** The `sizes` an info.json lists (level 0 servers serve these). */
export function infoSizes(bytes: Uint8Array): Array<{ width: number; height: number }> {
  try {
    const info = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    if (!isObject(info)) return [];
    return asArray(info.sizes).flatMap((s) => {
      if (!isObject(s)) return [];
      const width = positive(s.width);
      const height = positive(s.height);
      return width && height ? [{ width, height }] : [];
    });
  } catch {
    return [];
  }
}

/** An annotation page's items (v3) or resources (v2). */
function annotationsOf(page: unknown): Json[] {
  if (!isObject(page)) return [];
  return [...asArray(page.items), ...asArray(page.resources)].filter(isObject);
}

const XYWH = /#xywh=(?:pixel:)?(\d+(?:\.\d+)?),(\d+(?:\.\d+)?),(\d+(?:\.\d+)?),(\d+(?:\.\d+)?)$/;

function targetBox(target: unknown, canvasId: string): Box | null | undefined {
  for (const t of asArray(target)) {
    const id = typeof t === 'string' ? t : isObject(t) ? (idOf(t.source) ?? idOf(t)) : null;
    if (!id) continue;
    const [base] = id.split('#');
    if (base !== canvasId) continue;
    let spec = id;
    if (isObject(t) && isObject(t.selector) && typeof t.selector.value === 'string')
      spec = `#${t.selector.value}`;
    const m = XYWH.exec(spec);
    if (!m) return null;
    const [x, y, w, h] = m.slice(1).map(Number) as [number, number, number, number];
    return { x, y, w, h };
  }
  return undefined;
}

function bodyText(anno: Json): string | null {
  for (const body of [...asArray(anno.body), ...asArray(anno.resource)]) {
    if (!isObject(body)) continue;
    const type = typeOf(body);
    if (type === 'TextualBody' && typeof body.value === 'string') return oneLine(body.value);
    if ((type === 'cnt:ContentAsText' || type === 'dctypes:Text') && typeof body.chars === 'string')
      return oneLine(body.chars.replace(/<[^>]*>/g, ' '));
  }
  return null;
}

/**
 * The text annotations of `pages` that target `canvas` with a region, as line segments in the
 * image's pixels (scaled from the canvas's space), in their order. Comments, tags and
 * annotations without a region are left out: a line is a region with text.
 */
export function annotationLines(
  pages: unknown[],
  canvas: { id: string; width: number; height: number },
  image: { width: number; height: number },
): Segment[] {
  const sx = image.width / canvas.width;
  const sy = image.height / canvas.height;
  const lines: Segment[] = [];
  for (const page of pages) {
    for (const anno of annotationsOf(page)) {
      // A comment or a tag is no line; v2 paints its transcriptions (`sc:painting` with text).
      const motivation = asArray(anno.motivation).map(String).join(' ');
      if (/commenting|tagging|describing|linking|bookmarking|highlighting/.test(motivation))
        continue;
      const text = bodyText(anno);
      const box = targetBox(anno.target ?? anno.on, canvas.id);
      if (!text || !box) continue;
      const x = Math.max(0, Math.round(box.x * sx));
      const y = Math.max(0, Math.round(box.y * sy));
      const w = Math.min(image.width - x, Math.round(box.w * sx));
      const h = Math.min(image.height - y, Math.round(box.h * sy));
      if (w <= 0 || h <= 0) continue;
      lines.push({ index: lines.length, target: { kind: 'xywh', box: { x, y, w, h } }, text });
    }
  }
  return lines;
}

/** Line boxes of a transcript made for a `from`-sized image, in a `to`-sized image's pixels. */
export function scaleSegments(
  segments: Segment[],
  from: { width: number; height: number },
  to: { width: number; height: number },
): Segment[] {
  if (from.width === to.width && from.height === to.height) return segments;
  const sx = to.width / from.width;
  const sy = to.height / from.height;
  return segments.map((s) => {
    if (s.target.kind !== 'xywh') return s;
    const { x, y, w, h } = s.target.box;
    const nx = Math.min(to.width, Math.round(x * sx));
    const ny = Math.min(to.height, Math.round(y * sy));
    return {
      ...s,
      target: {
        kind: 'xywh',
        box: {
          x: nx,
          y: ny,
          w: Math.max(0, Math.min(to.width - nx, Math.round(w * sx))),
          h: Math.max(0, Math.min(to.height - ny, Math.round(h * sy))),
        },
      },
    };
  });
}
