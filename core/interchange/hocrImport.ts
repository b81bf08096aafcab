/**
 * I6: an hOCR file (XHTML as tesseract, OCRopus or kraken write it) read into Quire's line
 * segments: one `ocr_page`, its lines (`ocr_line` and its typographic kinds) with their words'
 * text and confidence, the page size its bbox gives and the `ocr-system` that wrote it.
 */

import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Box, Segment } from '../annotation';
import {
  type ImportedTranscript,
  insidePage,
  localName,
  oneLine,
  positiveInteger,
  TranscriptRejection,
} from './transcriptParts';

/** The XHTML DOCTYPE hOCR writers put first: a public identifier, no internal subset. */
const XHTML_DOCTYPE = /<!DOCTYPE\s+html(\s+PUBLIC\s+"[^"[\]<>]*"(\s+"[^"[\]<>]*")?)?\s*>/i;

export function looksLikeHocr(text: string): boolean {
  const head = text.slice(0, 4096);
  return /<html[\s>]/i.test(head) && /class\s*=\s*["'][^"']*\bocr_page\b/.test(text);
}

/** hOCR's `title` properties ("bbox 0 0 10 10; x_wconf 93") by name. */
function hocrProperties(title: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (title ?? '').split(';')) {
    const match = /^\s*([a-z_]+)\s+(.*?)\s*$/i.exec(part);
    if (match) out.set(match[1]!, match[2]!);
  }
  return out;
}

function hocrBox(title: string | undefined): Box | undefined {
  const bbox = hocrProperties(title).get('bbox');
  const numbers = bbox?.split(/\s+/).map(Number);
  if (numbers?.length !== 4 || !numbers.every(Number.isFinite)) return undefined;
  const [x0, y0, x1, y1] = numbers as [number, number, number, number];
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

/** An element of fast-xml-parser's ordered tree: `{ tag: children, ':@': attributes }`. */
type OrderedNode = Record<string, unknown>;

function orderedTag(node: OrderedNode): string | undefined {
  return Object.keys(node).find((k) => k !== ':@');
}

function orderedAttribute(node: OrderedNode, name: string): string | undefined {
  const attributes = node[':@'] as Record<string, unknown> | undefined;
  const value = attributes?.[`@${name}`];
  return typeof value === 'string' ? value : undefined;
}

function orderedChildren(node: OrderedNode): OrderedNode[] {
  const tag = orderedTag(node);
  const value = tag ? node[tag] : undefined;
  return Array.isArray(value) ? (value as OrderedNode[]) : [];
}

function classesOf(node: OrderedNode): string[] {
  return (orderedAttribute(node, 'class') ?? '').split(/\s+/).filter((c) => c.length > 0);
}

function orderedText(node: OrderedNode): string {
  if (typeof node['#text'] === 'string' || typeof node['#text'] === 'number') {
    return String(node['#text']);
  }
  return orderedChildren(node).map(orderedText).join('');
}

/** Every element in document order that has one of `classes`, not looking inside a match. */
function elementsWithClass(nodes: OrderedNode[], classes: ReadonlySet<string>): OrderedNode[] {
  const out: OrderedNode[] = [];
  for (const node of nodes) {
    if (!orderedTag(node) || orderedTag(node) === '#text') continue;
    if (classesOf(node).some((c) => classes.has(c))) out.push(node);
    else out.push(...elementsWithClass(orderedChildren(node), classes));
  }
  return out;
}

const HOCR_PAGE = new Set(['ocr_page']);
/** The hOCR classes that are a line of text (ocr_line and its typographic kinds). */
const HOCR_LINES = new Set(['ocr_line', 'ocr_header', 'ocr_caption', 'ocr_textfloat']);
const HOCR_WORDS = new Set(['ocrx_word']);

export function readHocr(raw: string): ImportedTranscript {
  // The XHTML DOCTYPE names a public DTD and declares nothing: it is dropped, and any other
  // DOCTYPE (one with an internal subset, entities) is refused below as for every format.
  const text = raw.replace(XHTML_DOCTYPE, '');
  if (/<!DOCTYPE/i.test(text)) {
    throw new TranscriptRejection('transcript_malformed', 'the transcript carries a DOCTYPE');
  }
  if (XMLValidator.validate(text) !== true) {
    throw new TranscriptRejection(
      'transcript_malformed',
      'the hOCR is not well-formed XHTML (hOCR is imported as XML)',
    );
  }
  const tree = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@',
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: false,
    processEntities: true,
    htmlEntities: true,
    preserveOrder: true,
  }).parse(text) as OrderedNode[];
  const html = tree.find((n) => localName(orderedTag(n) ?? '') === 'html');
  if (!html) throw new TranscriptRejection('transcript_unsupported', 'the hOCR has no html root');
  const pages = elementsWithClass([html], HOCR_PAGE);
  if (pages.length !== 1) {
    throw new TranscriptRejection(
      'transcript_invalid',
      'an hOCR transcript must describe one page',
    );
  }
  const page = pages[0]!;
  const pageBox = hocrBox(orderedAttribute(page, 'title'));
  if (!pageBox) {
    throw new TranscriptRejection('transcript_invalid', "the hOCR page's bbox is missing");
  }
  const width = positiveInteger(String(pageBox.x + pageBox.w), 'page bbox width');
  const height = positiveInteger(String(pageBox.y + pageBox.h), 'page bbox height');
  let producer: string | null = null;
  let language: string | undefined;
  const walkHead = (nodes: OrderedNode[]) => {
    for (const node of nodes) {
      const tag = localName(orderedTag(node) ?? '');
      if (tag === 'meta' && orderedAttribute(node, 'name') === 'ocr-system') {
        producer = oneLine(orderedAttribute(node, 'content') ?? '').slice(0, 200) || null;
      }
      if (tag && tag !== '#text') walkHead(orderedChildren(node));
    }
  };
  walkHead([html]);
  const segments: Segment[] = [];
  for (const line of elementsWithClass(orderedChildren(page), HOCR_LINES)) {
    const box = hocrBox(orderedAttribute(line, 'title'));
    if (!box) throw new TranscriptRejection('transcript_invalid', 'a text line has no bbox');
    const words = elementsWithClass(orderedChildren(line), HOCR_WORDS);
    const lineText =
      words.length > 0 ? words.map((w) => oneLine(orderedText(w))).join(' ') : orderedText(line);
    const segment: Segment = {
      index: segments.length,
      target: { kind: 'xywh', box: insidePage(box, width, height) },
      text: oneLine(lineText),
    };
    const confidences = (words.length > 0 ? words : [line])
      .map((w) => Number(hocrProperties(orderedAttribute(w, 'title')).get('x_wconf')))
      .filter((c) => Number.isFinite(c) && c >= 0 && c <= 100);
    if (confidences.length > 0) {
      segment.confidence = confidences.reduce((a, b) => a + b, 0) / confidences.length / 100;
    }
    language ??= orderedAttribute(line, 'lang');
    segments.push(segment);
  }
  if (!language) {
    for (const par of elementsWithClass(orderedChildren(page), new Set(['ocr_par']))) {
      language ??= orderedAttribute(par, 'lang');
    }
  }
  const namespace = orderedAttribute(html, 'xmlns') ?? '';
  return {
    format: 'hocr',
    namespace,
    producer,
    width,
    height,
    ...(language ? { language } : {}),
    segments,
  };
}
