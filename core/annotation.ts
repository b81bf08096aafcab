/**
 * Segments and the canonical IIIF AnnotationPage (Presentation 3) built from them.
 * A segment is one line of an image page (`#xywh=`) or one span of a recording
 * (`#t=start,end`); it is the unit of partial completion (J2).
 */
export type Box = { x: number; y: number; w: number; h: number };

export type SegmentTarget = { kind: 'xywh'; box: Box } | { kind: 't'; start: number; end: number };

export interface Segment {
  index: number;
  target: SegmentTarget;
  text: string;
  speaker?: string;
  confidence?: number;
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
    segments.push(segment);
  }
  return segments.sort((a, b) => a.index - b.index);
}
