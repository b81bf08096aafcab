/**
 * Segments and the canonical IIIF AnnotationPage (Presentation 3) built from them.
 * A segment is one line of an image page (`#xywh=`) or one span of a recording
 * (`#t=start,end`); it is the unit of partial completion (J2).
 */
export type Box = { x: number; y: number; w: number; h: number };

export type SegmentTarget = { kind: 'xywh'; box: Box } | { kind: 't'; start: number; end: number };

/**
 * V1: who a line's text is from: `machine` (an engine), `imported` (a file or a PDF's text
 * layer, V10: its source is the stamp's `by.id`), or a person (`edited`, `verified`).
 */
export type LineState = 'machine' | 'imported' | 'edited' | 'verified';

export const LINE_STATES: readonly LineState[] = ['machine', 'imported', 'edited', 'verified'];

/**
 * V1: who set a line's state, as every revision's AnnotationPage carries it (`quire:stateBy`,
 * published with it, so its spelling stays). core/actor.ts converts it to and from `Actor`.
 */
export interface LineAuthor {
  kind: 'account' | 'api-key' | 'engine' | 'import';
  id: string;
}

/** V1: a line's state, who set it and when (ISO 8601); kept in every revision. */
export interface LineStamp {
  state: LineState;
  by: LineAuthor;
  at: string;
}

export interface Segment {
  index: number;
  target: SegmentTarget;
  text: string;
  speaker?: string;
  confidence?: number;
  /** V1: absent on a segment not yet written; `commitRevision` stamps every line it writes. */
  stamp?: LineStamp;
}

export interface TextualBody {
  type: 'TextualBody';
  value: string;
  format: 'text/plain';
  language?: string;
  purpose?: 'transcribing';
}

export interface Annotation {
  id: string;
  type: 'Annotation';
  motivation: 'supplementing';
  body: TextualBody;
  target: string;
  'quire:index': number;
  'quire:speaker'?: string;
  'quire:confidence'?: number;
  /** V1: the line's state, its author and time. Revisions written before V1 have none (`machine`). */
  'quire:state'?: LineState;
  'quire:stateBy'?: LineAuthor;
  'quire:stateAt'?: string;
}

export interface AnnotationPage {
  '@context': 'http://iiif.io/api/presentation/3/context.json';
  id: string;
  type: 'AnnotationPage';
  items: Annotation[];
}

export function targetFragment(target: SegmentTarget): string {
  if (target.kind === 'xywh') {
    const { x, y, w, h } = target.box;
    return `#xywh=${Math.round(x)},${Math.round(y)},${Math.round(w)},${Math.round(h)}`;
  }
  return `#t=${round3(target.start)},${round3(target.end)}`;
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}

export function parseTarget(target: string): SegmentTarget | undefined {
  const xywh = /#xywh=(-?\d+(?:\.\d+)?),(-?\d+(?:\.\d+)?),(\d+(?:\.\d+)?),(\d+(?:\.\d+)?)$/.exec(
    target,
  );
  if (xywh) {
    const [x, y, w, h] = xywh.slice(1).map(Number) as [number, number, number, number];
    return { kind: 'xywh', box: { x, y, w, h } };
  }
  const t = /#t=(\d+(?:\.\d+)?),(\d+(?:\.\d+)?)$/.exec(target);
  if (t) return { kind: 't', start: Number(t[1]), end: Number(t[2]) };
  return undefined;
}

export function emptyAnnotationPage(canvasUri: string): AnnotationPage {
  return buildAnnotationPage(canvasUri, 0, []);
}

export function buildAnnotationPage(
  canvasUri: string,
  revision: number,
  segments: readonly Segment[],
  language?: string,
): AnnotationPage {
  const ordered = [...segments].sort((a, b) => a.index - b.index);
  return {
    '@context': 'http://iiif.io/api/presentation/3/context.json',
    id: `${canvasUri}/annotations/r${revision}`,
    type: 'AnnotationPage',
    items: ordered.map((segment) => {
      const annotation: Annotation = {
        id: `${canvasUri}/annotations/r${revision}/s${segment.index}`,
        type: 'Annotation',
        motivation: 'supplementing',
        body: {
          type: 'TextualBody',
          value: segment.text,
          format: 'text/plain',
          purpose: 'transcribing',
          ...(language ? { language } : {}),
        },
        target: `${canvasUri}${targetFragment(segment.target)}`,
        'quire:index': segment.index,
      };
      if (segment.speaker !== undefined) annotation['quire:speaker'] = segment.speaker;
      if (segment.confidence !== undefined) annotation['quire:confidence'] = segment.confidence;
      if (segment.stamp) {
        annotation['quire:state'] = segment.stamp.state;
        annotation['quire:stateBy'] = segment.stamp.by;
        annotation['quire:stateAt'] = segment.stamp.at;
      }
      return annotation;
    }),
  };
}

export function segmentsOf(page: AnnotationPage): Segment[] {
  const segments: Segment[] = [];
  for (const item of page.items) {
    const target = parseTarget(item.target);
    if (!target) continue;
    const segment: Segment = { index: item['quire:index'], target, text: item.body.value };
    if (item['quire:speaker'] !== undefined) segment.speaker = item['quire:speaker'];
    if (item['quire:confidence'] !== undefined) segment.confidence = item['quire:confidence'];
    if (item['quire:state'] && item['quire:stateBy'] && item['quire:stateAt']) {
      segment.stamp = {
        state: item['quire:state'],
        by: item['quire:stateBy'],
        at: item['quire:stateAt'],
      };
    }
    segments.push(segment);
  }
  return segments.sort((a, b) => a.index - b.index);
}

/** V1: a line's state; a line of a revision written before V1 reads as `machine`. */
export function lineStateOf(segment: Segment): LineState {
  return segment.stamp?.state ?? 'machine';
}

/** V1 V10: a line a person edited or verified (or ground truth imported verified): certain. */
export function isCheckedLine(segment: Segment): boolean {
  const state = lineStateOf(segment);
  return state === 'edited' || state === 'verified';
}

/** The language a page's transcript declares, if any. */
export function pageLanguage(annotationPage: AnnotationPage): string | undefined {
  return annotationPage.items.find((a) => a.body.language)?.body.language;
}
