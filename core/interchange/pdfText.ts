/**
 * I5: what poppler's tools say about a PDF, read into Quire's terms. `pdfinfo` gives the page
 * count, each page's size in points and whether the file is encrypted; `pdftotext -raw
 * -bbox` gives a page's text layer as words with boxes in points from the top left. A text
 * line becomes a line segment whose box is in the pixels of the page as rendered. Pure: `ingest/documents.ts` runs the tools.
 */

import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Segment } from '../annotation';

export interface PdfPageSize {
  /** Points (1/72 inch), as the page's crop box gives them. */
  width: number;
  height: number;
  /** Degrees the page is turned when shown (0, 90, 180, 270). */
  rotation: number;
}

export interface PdfInfo {
  pages: number;
  encrypted: boolean;
  /** By page number from 1; filled only when pdfinfo was asked for a page range. */
  sizes: Map<number, PdfPageSize>;
}

export function parsePdfInfo(text: string): PdfInfo {
  const pages = Number(/^Pages:\s+(\d+)\s*$/m.exec(text)?.[1] ?? Number.NaN);
  const encrypted = /^Encrypted:\s+yes/m.test(text);
  const sizes = new Map<number, PdfPageSize>();
  for (const match of text.matchAll(/^Page\s+(\d+)\s+size:\s+([\d.]+)\s+x\s+([\d.]+)\s+pts/gm)) {
    sizes.set(Number(match[1]), { width: Number(match[2]), height: Number(match[3]), rotation: 0 });
  }
  for (const match of text.matchAll(/^Page\s+(\d+)\s+rot:\s+(\d+)/gm)) {
    const size = sizes.get(Number(match[1]));
    if (size) size.rotation = Number(match[2]) % 360;
  }
  return { pages: Number.isInteger(pages) ? pages : 0, encrypted, sizes };
}

/** The pixel size of a page of `size` points rendered at `dpi`, as pdftoppm rounds it. */
export function renderedSize(size: PdfPageSize, dpi: number): { width: number; height: number } {
  const turned = size.rotation === 90 || size.rotation === 270;
  const w = turned ? size.height : size.width;
  const h = turned ? size.width : size.height;
  return { width: Math.ceil((w * dpi) / 72 - 1e-6), height: Math.ceil((h * dpi) / 72 - 1e-6) };
}

/** One row of `pdfimages -list`: an image drawn on a page, with its own pixels and resolution. */
export interface PdfImage {
  page: number;
  /** image, mask, smask or stencil */
  type: string;
  width: number;
  height: number;
  color: string;
  bitsPerComponent: number;
  /** How the image is stored: jpeg, image (Flate or raw), ccitt, jbig2, jpx ... */
  encoding: string;
  xPpi: number;
  yPpi: number;
}

export function parsePdfImages(text: string): PdfImage[] {
  const images: PdfImage[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    // page num type width height color comp bpc enc interp object ID x-ppi y-ppi size ratio
    if (f.length < 14 || !/^\d+$/.test(f[0]!)) continue;
    images.push({
      page: Number(f[0]),
      type: f[2]!,
      width: Number(f[3]),
      height: Number(f[4]),
      color: f[5]!,
      bitsPerComponent: Number(f[7]),
      encoding: f[8]!,
      xPpi: Number(f[12]),
      yPpi: Number(f[13]),
    });
  }
  return images;
}

/**
 * I9: the one scanned image a page is, when it is one: a single image (no mask, no second
 * image) in grey, RGB or a palette, drawn upright over the whole page (its pixels at its own
 * resolution cover the page's size within 2%). Such a page is taken at the image's own pixels,
 * not re-rendered at the configured resolution: a 96 ppi scan stays 96 ppi, a bilevel scan
 * stays bilevel. Anything else (vector drawing, several images, a turned page) is rendered.
 */
export function scannedImage(images: PdfImage[], size: PdfPageSize): PdfImage | null {
  if (images.length !== 1 || size.rotation !== 0) return null;
  const image = images[0]!;
  if (image.type !== 'image' || !['gray', 'rgb', 'index'].includes(image.color)) return null;
  if (!(image.xPpi > 0 && image.yPpi > 0 && image.width > 0 && image.height > 0)) return null;
  const covers = (pixels: number, ppi: number, points: number) =>
    Math.abs((pixels * 72) / ppi - points) <= 0.02 * points;
  return covers(image.width, image.xPpi, size.width) &&
    covers(image.height, image.yPpi, size.height)
    ? image
    : null;
}

type Node = Record<string, unknown>;

const REPEATED = new Set(['page', 'word']);

function list(node: unknown, name: string): Node[] {
  if (!node || typeof node !== 'object') return [];
  const value = (node as Node)[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map((v) =>
    typeof v === 'object' && v !== null ? (v as Node) : { '#text': String(v) },
  );
}

function num(node: Node, name: string): number {
  return Number(node[`@${name}`]);
}

/**
 * The lines of one page's text layer, from `pdftotext -raw -bbox` of that page: its words in
 * the order the page's content draws them, which for an OCR layer (tesseract, ABBYY) and most
 * born-digital files is line by line. A word that starts left of the one before it or does not
 * overlap its line vertically starts a new line, as `pdftotext -raw` breaks its text lines.
 * Boxes are scaled from the page's points to `pixels`. A page without text gives no lines.
 */
export function textLayerLines(
  rawBbox: string,
  pixels: { width: number; height: number },
): Segment[] {
  // pdftotext writes an XHTML DOCTYPE without an internal subset; nothing in it is needed.
  const text = rawBbox.replace(/<!DOCTYPE[^>[]*>/i, '');
  if (XMLValidator.validate(text) !== true) return [];
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@',
    parseTagValue: false,
    parseAttributeValue: false,
    processEntities: true,
    htmlEntities: true,
    isArray: (name) => REPEATED.has(name),
  });
  const document = parser.parse(text) as Node;
  const page = list(list(list(document, 'html')[0], 'body')[0], 'doc')
    .flatMap((doc) => list(doc, 'page'))
    .at(0);
  if (!page) return [];
  const sx = pixels.width / num(page, 'width');
  const sy = pixels.height / num(page, 'height');
  if (!Number.isFinite(sx) || !Number.isFinite(sy) || sx <= 0 || sy <= 0) return [];
  interface Line {
    words: string[];
    xMin: number;
    yMin: number;
    xMax: number;
    yMax: number;
    lastX: number;
    lastRight: number;
  }
  const lines: Line[] = [];
  for (const word of list(page, 'word')) {
    const content = String(word['#text'] ?? '').trim();
    const [xMin, yMin, xMax, yMax] = ['xMin', 'yMin', 'xMax', 'yMax'].map((n) => num(word, n));
    if (content.length === 0 || ![xMin, yMin, xMax, yMax].every(Number.isFinite)) continue;
    const line = lines.at(-1);
    const sameLine =
      line !== undefined && xMin! >= line.lastX && yMin! < line.yMax && yMax! > line.yMin;
    if (line && sameLine) {
      // Words that touch (a word and its punctuation drawn apart) are one word, as pdftotext joins them.
      const gap = xMin! - line.lastRight;
      if (gap < 0.1 * (yMax! - yMin!)) line.words[line.words.length - 1] += content;
      else line.words.push(content);
      line.xMin = Math.min(line.xMin, xMin!);
      line.yMin = Math.min(line.yMin, yMin!);
      line.xMax = Math.max(line.xMax, xMax!);
      line.yMax = Math.max(line.yMax, yMax!);
      line.lastX = xMin!;
      line.lastRight = xMax!;
    } else {
      lines.push({
        words: [content],
        xMin: xMin!,
        yMin: yMin!,
        xMax: xMax!,
        yMax: yMax!,
        lastX: xMin!,
        lastRight: xMax!,
      });
    }
  }
  return lines.map((line, index) => {
    const x = Math.min(pixels.width, Math.max(0, Math.round(line.xMin * sx)));
    const y = Math.min(pixels.height, Math.max(0, Math.round(line.yMin * sy)));
    const right = Math.min(pixels.width, Math.max(x, Math.round(line.xMax * sx)));
    const bottom = Math.min(pixels.height, Math.max(y, Math.round(line.yMax * sy)));
    return {
      index,
      target: { kind: 'xywh', box: { x, y, w: right - x, h: bottom - y } },
      text: line.words.join(' '),
    };
  });
}
