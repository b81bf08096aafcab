/**
 * I3: reading a transcript another tool wrote (PAGE XML of any PRImA release, ALTO v2-v4, and
 * I6 hOCR, read in hocrImport.ts) into Quire's line segments, with the page size the file
 * declares and the software that made it. Every refusal is a `TranscriptRejection` with a stable code; the message never quotes
 * the file's content. Pure: the caller checks the size against the image and stores the lines.
 */

import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Box, Segment } from '../annotation';
import { languageTag } from '../jobRequest';
import {
  describeTextFault,
  MAX_LINE_CHARS,
  MAX_PAGE_TEXT_BYTES,
  pageTextBytes,
  textFault,
} from '../text';
import { looksLikeHocr, readHocr } from './hocrImport';
import {
  DEFAULT_TRANSCRIPT_LIMITS,
  type ImportedTranscript,
  insidePage,
  localName,
  oneLine,
  positiveInteger,
  type TranscriptLimits,
  TranscriptRejection,
} from './transcriptParts';

export {
  DEFAULT_TRANSCRIPT_LIMITS,
  type ImportedTranscript,
  TRANSCRIPT_REJECTIONS,
  type TranscriptFormat,
  type TranscriptLimits,
  TranscriptRejection,
  type TranscriptRejectionCode,
} from './transcriptParts';

const PAGE_NAMESPACE_PREFIX = 'http://schema.primaresearch.org/PAGE/gts/pagecontent/';
/** PAGE releases are named by their date; the namespace is kept in the provenance, so bounded. */
const PAGE_NAMESPACE =
  /^http:\/\/schema\.primaresearch\.org\/PAGE\/gts\/pagecontent\/\d{4}-\d{2}-\d{2}$/;
/** Element depth fast-xml-parser reads; real PAGE and ALTO files nest fewer than 20 deep. */
export const MAX_XML_DEPTH = 100;
/** Points of one polygon; a text line's outline has tens, a detailed one hundreds. */
export const MAX_POLYGON_POINTS = 10_000;
const ALTO_NAMESPACES = /^http:\/\/(www\.)?loc\.gov\/standards\/alto(\/ns-v[234]#|\/?)$/;

/** Elements that may repeat, always read as arrays so one and many look the same. */
const REPEATED = new Set([
  'TextRegion',
  'TextLine',
  'Word',
  'TextEquiv',
  'Point',
  'OrderedGroup',
  'UnorderedGroup',
  'OrderedGroupIndexed',
  'UnorderedGroupIndexed',
  'RegionRef',
  'RegionRefIndexed',
  'TableRegion',
  'Page',
  'PrintSpace',
  'TopMargin',
  'LeftMargin',
  'RightMargin',
  'BottomMargin',
  'TextBlock',
  'ComposedBlock',
  'String',
  'SP',
  'HYP',
  'OCRProcessing',
  'ocrProcessingStep',
  'Processing',
  'processingSoftware',
]);

type XmlNode = Record<string, unknown>;

function parseXml(text: string): XmlNode {
  // No DTDs at all: no entity expansion, no external references (XXE, billion laughs).
  if (/<!DOCTYPE/i.test(text)) {
    throw new TranscriptRejection('transcript_malformed', 'the transcript carries a DOCTYPE');
  }
  if (XMLValidator.validate(text) !== true) {
    throw new TranscriptRejection('transcript_malformed', 'the transcript is not well-formed XML');
  }
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@',
    removeNSPrefix: false,
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: false,
    processEntities: true,
    htmlEntities: false,
    isArray: (name) => REPEATED.has(localName(name)),
    maxNestedTags: MAX_XML_DEPTH,
  });
  try {
    return parser.parse(text) as XmlNode;
  } catch (error) {
    // R6: the parser's own refusals are plain Errors; each becomes a code (its message is not
    // passed on: it may quote the file).
    const message = error instanceof Error ? error.message : '';
    if (/nested/i.test(message)) {
      throw new TranscriptRejection(
        'transcript_too_deep',
        `the transcript nests elements more than ${MAX_XML_DEPTH} deep`,
      );
    }
    if (/reserved|prototype/i.test(message)) {
      throw new TranscriptRejection(
        'transcript_reserved_name',
        'the transcript uses a reserved name (__proto__, constructor, prototype) for an element or attribute',
      );
    }
    throw new TranscriptRejection('transcript_malformed', 'the transcript could not be read');
  }
}

/** A child element by local name (namespace prefixes ignored), as an array. */
function children(node: unknown, name: string): XmlNode[] {
  if (!node || typeof node !== 'object') return [];
  const out: XmlNode[] = [];
  for (const [key, value] of Object.entries(node as XmlNode)) {
    if (key.startsWith('@') || localName(key) !== name) continue;
    for (const v of Array.isArray(value) ? value : [value]) {
      out.push(typeof v === 'object' && v !== null ? (v as XmlNode) : { '#text': String(v) });
    }
  }
  return out;
}

function child(node: unknown, name: string): XmlNode | undefined {
  return children(node, name)[0];
}

function attribute(node: XmlNode | undefined, name: string): string | undefined {
  if (!node) return undefined;
  const value = node[`@${name}`];
  return typeof value === 'string' ? value : undefined;
}

function textOf(node: XmlNode | undefined): string {
  if (!node) return '';
  const value = node['#text'];
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';
}

function rootOf(document: XmlNode): { name: string; node: XmlNode } {
  for (const [key, value] of Object.entries(document)) {
    if (key.startsWith('?') || key.startsWith('#') || key.startsWith('@')) continue;
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      return { name: key, node: value as XmlNode };
    }
  }
  throw new TranscriptRejection('transcript_malformed', 'the transcript has no root element');
}

/** The namespace the root element is in (default or prefixed). */
function namespaceOf(name: string, node: XmlNode): string {
  const colon = name.indexOf(':');
  const attr = colon === -1 ? '@xmlns' : `@xmlns:${name.slice(0, colon)}`;
  const value = node[attr];
  return typeof value === 'string' ? value : '';
}

function finiteNumber(value: string | undefined, what: string): number {
  const n = Number(value);
  if (value === undefined || value.trim() === '' || !Number.isFinite(n)) {
    throw new TranscriptRejection(
      'transcript_invalid',
      `a line's ${what} is missing or not a number`,
    );
  }
  return n;
}

function boundingBox(points: Array<[number, number]>): Box {
  // A loop, not Math.min(...xs): spreading a long polygon overflows the call stack (R6).
  let minX = Number.POSITIVE_INFINITY;
  let minY = Number.POSITIVE_INFINITY;
  let maxX = Number.NEGATIVE_INFINITY;
  let maxY = Number.NEGATIVE_INFINITY;
  for (const [px, py] of points) {
    if (px < minX) minX = px;
    if (px > maxX) maxX = px;
    if (py < minY) minY = py;
    if (py > maxY) maxY = py;
  }
  return { x: minX, y: minY, w: maxX - minX, h: maxY - minY };
}

function checkPointCount(count: number): void {
  if (count > MAX_POLYGON_POINTS) {
    throw new TranscriptRejection(
      'transcript_too_large',
      `a line's outline has at most ${MAX_POLYGON_POINTS} points`,
    );
  }
}

export function parseTranscript(
  bytes: Uint8Array,
  limits: TranscriptLimits = DEFAULT_TRANSCRIPT_LIMITS,
): ImportedTranscript {
  if (bytes.byteLength > limits.maxTranscriptBytes) {
    throw new TranscriptRejection(
      'transcript_too_large',
      `a transcript is larger than ${limits.maxTranscriptBytes} bytes`,
    );
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new TranscriptRejection('transcript_malformed', 'the transcript is not UTF-8 text');
  }
  if (looksLikeHocr(text)) {
    const transcript = readHocr(text);
    if (transcript.segments.length > limits.maxTranscriptLines) {
      throw new TranscriptRejection(
        'transcript_too_large',
        `a transcript holds at most ${limits.maxTranscriptLines} lines`,
      );
    }
    return transcript;
  }
  const { name, node } = rootOf(parseXml(text));
  const namespace = namespaceOf(name, node);
  const root = localName(name);
  let transcript: ImportedTranscript;
  if (root === 'PcGts' && namespace.startsWith(PAGE_NAMESPACE_PREFIX)) {
    if (!PAGE_NAMESPACE.test(namespace)) {
      throw new TranscriptRejection(
        'transcript_invalid_namespace',
        'the PAGE namespace must name a release by its date (…/pagecontent/2019-07-15)',
      );
    }
    transcript = readPage(node, namespace);
  } else if (root === 'alto' && ALTO_NAMESPACES.test(namespace)) {
    transcript = readAlto(node, namespace);
  } else {
    throw new TranscriptRejection(
      'transcript_unsupported',
      'the transcript is not PAGE XML, ALTO or hOCR',
    );
  }
  if (transcript.segments.length > limits.maxTranscriptLines) {
    throw new TranscriptRejection(
      'transcript_too_large',
      `a transcript holds at most ${limits.maxTranscriptLines} lines`,
    );
  }
  checkApiLimits(transcript);
  return transcript;
}

/** R6: an imported page holds what the API would accept from a person (SPEC §7 limits). */
function checkApiLimits(transcript: ImportedTranscript): void {
  if (transcript.language !== undefined && !languageTag.safeParse(transcript.language).success) {
    throw new TranscriptRejection(
      'transcript_invalid_language',
      "the transcript's language is not a BCP 47 tag such as de or en-GB",
    );
  }
  for (const segment of transcript.segments) {
    const fault = textFault(segment.text);
    if (fault) {
      throw new TranscriptRejection(
        'transcript_invalid_text',
        `line ${segment.index + 1} ${describeTextFault(fault)}`,
      );
    }
    if (segment.text.length > MAX_LINE_CHARS) {
      throw new TranscriptRejection(
        'transcript_line_too_long',
        `line ${segment.index + 1} is longer than ${MAX_LINE_CHARS} characters`,
      );
    }
  }
  if (pageTextBytes(transcript.segments) > MAX_PAGE_TEXT_BYTES) {
    throw new TranscriptRejection(
      'transcript_too_large',
      `a page's lines may hold at most ${MAX_PAGE_TEXT_BYTES} bytes of text in all`,
    );
  }
  const producerFault = transcript.producer === null ? undefined : textFault(transcript.producer);
  if (producerFault) {
    throw new TranscriptRejection(
      'transcript_invalid_text',
      `the producer ${describeTextFault(producerFault)}`,
    );
  }
}

// ---------------------------------------------------------------------------------------
// PAGE

function pagePoints(coords: XmlNode | undefined): Array<[number, number]> {
  if (!coords) return [];
  const points = attribute(coords, 'points');
  if (points !== undefined) {
    const pairs = points
      .trim()
      .split(/\s+/)
      .filter((p) => p.length > 0);
    checkPointCount(pairs.length);
    return pairs.map((pair) => {
      const [x, y] = pair.split(',');
      return [finiteNumber(x, 'x coordinate'), finiteNumber(y, 'y coordinate')];
    });
  }
  // Releases before 2013 wrote <Point x= y=/> children.
  const points2013 = children(coords, 'Point');
  checkPointCount(points2013.length);
  return points2013.map((p) => [
    finiteNumber(attribute(p, 'x'), 'x coordinate'),
    finiteNumber(attribute(p, 'y'), 'y coordinate'),
  ]);
}

/** The text a PAGE element holds: its TextEquiv of lowest index (or the first). */
function pageText(node: XmlNode): string | undefined {
  const equivs = children(node, 'TextEquiv');
  if (equivs.length === 0) return undefined;
  const ranked = [...equivs].sort(
    (a, b) => Number(attribute(a, 'index') ?? 0) - Number(attribute(b, 'index') ?? 0),
  );
  return textOf(child(ranked[0], 'Unicode'));
}

/** Region ids in reading order: nested ordered groups flattened, by their index attributes. */
function readingOrderOf(page: XmlNode): string[] {
  const order: string[] = [];
  const walk = (group: XmlNode) => {
    const entries: Array<{ index: number; position: number; node: XmlNode; isGroup: boolean }> = [];
    let position = 0;
    for (const [kind, isGroup] of [
      ['RegionRefIndexed', false],
      ['RegionRef', false],
      ['OrderedGroupIndexed', true],
      ['UnorderedGroupIndexed', true],
      ['OrderedGroup', true],
      ['UnorderedGroup', true],
    ] as const) {
      for (const node of children(group, kind)) {
        const index = Number(attribute(node, 'index') ?? Number.NaN);
        entries.push({
          index: Number.isFinite(index) ? index : 1e9 + position,
          position,
          node,
          isGroup,
        });
        position++;
      }
    }
    entries.sort((a, b) => a.index - b.index || a.position - b.position);
    for (const entry of entries) {
      if (entry.isGroup) {
        const ref = attribute(entry.node, 'regionRef');
        if (ref) order.push(ref);
        walk(entry.node);
      } else {
        const ref = attribute(entry.node, 'regionRef');
        if (ref) order.push(ref);
      }
    }
  };
  const readingOrder = child(page, 'ReadingOrder');
  for (const top of ['OrderedGroup', 'UnorderedGroup'] as const) {
    for (const group of children(readingOrder, top)) walk(group);
  }
  return order;
}

/** Every TextRegion, nested ones after their parent, in document order. */
function textRegionsOf(node: XmlNode): XmlNode[] {
  const out: XmlNode[] = [];
  for (const region of children(node, 'TextRegion')) {
    out.push(region);
    out.push(...textRegionsOf(region));
  }
  for (const table of children(node, 'TableRegion')) out.push(...textRegionsOf(table));
  return out;
}

function readPage(root: XmlNode, namespace: string): ImportedTranscript {
  const pages = children(root, 'Page');
  if (pages.length !== 1) {
    throw new TranscriptRejection('transcript_invalid', 'a PAGE transcript must describe one page');
  }
  const page = pages[0]!;
  const width = positiveInteger(attribute(page, 'imageWidth'), 'imageWidth');
  const height = positiveInteger(attribute(page, 'imageHeight'), 'imageHeight');
  const creator = oneLine(textOf(child(child(root, 'Metadata'), 'Creator')));
  const regions = textRegionsOf(page);
  const rank = new Map(readingOrderOf(page).map((id, i) => [id, i]));
  const ordered = regions
    .map((region, position) => ({
      region,
      position,
      rank: rank.get(attribute(region, 'id') ?? '') ?? Number.POSITIVE_INFINITY,
    }))
    .sort((a, b) => a.rank - b.rank || a.position - b.position);
  const segments: Segment[] = [];
  // PAGE's language names ("German") are not BCP 47 tags: an imported PAGE page keeps none.
  for (const { region } of ordered) {
    for (const line of children(region, 'TextLine')) {
      const points = pagePoints(child(line, 'Coords'));
      if (points.length === 0) {
        throw new TranscriptRejection('transcript_invalid', 'a text line has no coordinates');
      }
      const lineText =
        pageText(line) ??
        children(line, 'Word')
          .map((w) => pageText(w) ?? '')
          .join(' ');
      const segment: Segment = {
        index: segments.length,
        target: { kind: 'xywh', box: insidePage(boundingBox(points), width, height) },
        text: oneLine(lineText),
      };
      const conf = Number(attribute(child(line, 'TextEquiv'), 'conf'));
      if (Number.isFinite(conf) && conf >= 0 && conf <= 1) segment.confidence = conf;
      segments.push(segment);
    }
  }
  return {
    format: 'page',
    namespace,
    producer: creator.length > 0 ? creator.slice(0, 200) : null,
    width,
    height,
    segments,
  };
}

// ---------------------------------------------------------------------------------------
// ALTO

function altoProducer(description: XmlNode | undefined): string | null {
  const names: string[] = [];
  const softwareOf = (step: XmlNode) => {
    for (const software of children(step, 'processingSoftware')) {
      const name = oneLine(textOf(child(software, 'softwareName')));
      const version = oneLine(textOf(child(software, 'softwareVersion')));
      if (name) names.push(version ? `${name} ${version}` : name);
    }
  };
  for (const processing of children(description, 'OCRProcessing')) {
    for (const step of children(processing, 'ocrProcessingStep')) softwareOf(step);
    for (const step of children(processing, 'preProcessingStep')) softwareOf(step);
    for (const step of children(processing, 'postProcessingStep')) softwareOf(step);
  }
  for (const processing of children(description, 'Processing')) softwareOf(processing);
  return names.length > 0 ? names.join('; ').slice(0, 200) : null;
}

function altoBlocks(container: XmlNode): XmlNode[] {
  const out: XmlNode[] = [];
  for (const [key, value] of Object.entries(container)) {
    const name = localName(key);
    if (name !== 'TextBlock' && name !== 'ComposedBlock') continue;
    for (const block of value as XmlNode[]) {
      if (name === 'TextBlock') out.push(block);
      else out.push(...altoBlocks(block));
    }
  }
  return out;
}

function altoLineText(line: XmlNode): string {
  // fast-xml-parser groups children by name; the order of String/SP/HYP inside a line is the
  // order of the Strings, which is what matters (SP only separates words).
  const words = children(line, 'String').map((s) => attribute(s, 'CONTENT') ?? '');
  const hyphen = children(line, 'HYP')
    .map((h) => attribute(h, 'CONTENT') ?? '')
    .join('');
  return oneLine(words.join(' ') + hyphen);
}

function readAlto(root: XmlNode, namespace: string): ImportedTranscript {
  const description = child(root, 'Description');
  const unit = oneLine(textOf(child(description, 'MeasurementUnit'))) || 'pixel';
  if (unit !== 'pixel') {
    throw new TranscriptRejection(
      'transcript_unsupported',
      'only ALTO measured in pixels can be imported (MeasurementUnit pixel)',
    );
  }
  const pages = children(child(root, 'Layout'), 'Page');
  if (pages.length !== 1) {
    throw new TranscriptRejection(
      'transcript_invalid',
      'an ALTO transcript must describe one page',
    );
  }
  const page = pages[0]!;
  const width = positiveInteger(attribute(page, 'WIDTH'), 'page WIDTH');
  const height = positiveInteger(attribute(page, 'HEIGHT'), 'page HEIGHT');
  const areas = ['TopMargin', 'PrintSpace', 'LeftMargin', 'RightMargin', 'BottomMargin'].flatMap(
    (name) => children(page, name),
  );
  const segments: Segment[] = [];
  let language: string | undefined;
  for (const area of areas) {
    for (const block of altoBlocks(area)) {
      language ??= attribute(block, 'LANG');
      for (const line of children(block, 'TextLine')) {
        const box = {
          x: finiteNumber(attribute(line, 'HPOS'), 'HPOS'),
          y: finiteNumber(attribute(line, 'VPOS'), 'VPOS'),
          w: finiteNumber(attribute(line, 'WIDTH'), 'WIDTH'),
          h: finiteNumber(attribute(line, 'HEIGHT'), 'HEIGHT'),
        };
        const segment: Segment = {
          index: segments.length,
          target: { kind: 'xywh', box: insidePage(box, width, height) },
          text: altoLineText(line),
        };
        const confidences = children(line, 'String')
          .map((s) => Number(attribute(s, 'WC')))
          .filter((c) => Number.isFinite(c) && c >= 0 && c <= 1);
        if (confidences.length > 0) {
          segment.confidence = confidences.reduce((a, b) => a + b, 0) / confidences.length;
        }
        segments.push(segment);
      }
    }
  }
  return {
    format: 'alto',
    namespace,
    producer: altoProducer(description),
    width,
    height,
    ...(language ? { language } : {}),
    segments,
  };
}
