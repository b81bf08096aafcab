import type { Segment } from './annotation';
import { type Checkpoint, payloadsOf } from './checkpoints';
import type { LineBox } from './provider';

/**
 * How a transcript is built from a job's checkpoints (J1, J2), and the polish pass's mapping
 * of text to segments. Pure: the activities load the checkpoints and commit the result.
 */

/** The line boxes an annotation already has, so a page that has them is not segmented again. */
export function linesFromAnnotation(segments: readonly Segment[]): LineBox[] {
  return segments.flatMap((s) => (s.target.kind === 'xywh' ? [{ box: s.target.box }] : []));
}

/** Every segment recognized so far, by index: image lines one row each, audio in one row. */
export function recognizedSegments(saved: readonly Checkpoint[]): Segment[] {
  const out: Segment[] = [];
  for (const [seq, payload] of payloadsOf(saved, 'recognize')) {
    if ('segments' in payload) {
      out.push(...payload.segments);
      continue;
    }
    // An image line's box lives in the segment checkpoint; the commit puts it back.
    const segment: Segment = {
      index: seq,
      target: { kind: 'xywh', box: { x: 0, y: 0, w: 0, h: 0 } },
      text: payload.text ?? '',
    };
    if (payload.confidence != null) segment.confidence = payload.confidence;
    out.push(segment);
  }
  return out.sort((a, b) => a.index - b.index);
}

export interface Transcript {
  segments: Segment[];
  /** Lines with text from this run or, for kept lines, from a person (counted in `kept` too). */
  completed: number;
  total: number;
  /** V3: lines a person edited or verified that were kept as they were. */
  kept: number;
}

/**
 * J1 + J2: the page's new segments. An image page keeps every line it was segmented into: a
 * line recognized in no attempt keeps the text it had in the input revision (J2), so a
 * partial commit never erases a person's work. Polished text replaces the raw text only when
 * the workflow chose to use it.
 */
export function assembleTranscript(
  saved: readonly Checkpoint[],
  previous: readonly Segment[],
  options: { usePolish: boolean; protectedLines?: readonly number[] },
): Transcript {
  const polished = options.usePolish ? (payloadsOf(saved, 'polish').get(0)?.texts ?? {}) : {};
  const recognized = new Map(recognizedSegments(saved).map((s) => [s.index, s]));
  const lines = payloadsOf(saved, 'segment').get(0)?.lines;
  if (!lines) {
    const segments = [...recognized.values()].map((s) => ({
      ...s,
      text: polished[s.index] ?? s.text,
    }));
    return { segments, completed: segments.length, total: segments.length, kept: 0 };
  }
  const before = new Map(previous.map((s) => [s.index, s]));
  const kept = new Set((options.protectedLines ?? []).filter((i) => before.has(i)));
  let completed = 0;
  const segments = lines.map((line, index) => {
    const old = before.get(index);
    if (kept.has(index)) {
      // V3: a person's line stays exactly as it is, whatever the engine read.
      completed += 1;
      return { ...old!, target: { kind: 'xywh' as const, box: line.box } };
    }
    const got = recognized.get(index);
    const text = got ? (polished[index] ?? got.text) : (old?.text ?? '');
    const segment: Segment = { index, target: { kind: 'xywh', box: line.box }, text };
    if (got) completed += 1;
    if (got?.confidence != null) segment.confidence = got.confidence;
    // J2: a line not read in this run keeps its text, and the state that text had (V1).
    if (!got && old?.stamp) segment.stamp = old.stamp;
    return segment;
  });
  return { segments, completed, total: lines.length, kept: kept.size };
}

/** The text a polish pass reads: one recognized segment per line. */
export function polishInput(recognized: readonly Segment[]): string {
  return recognized.map((s) => s.text.replace(/\n/g, ' ')).join('\n');
}

/**
 * Maps a polish pass's output back to segment indexes; null when the pass changed the
 * number of lines, which cannot be mapped back.
 */
export function polishedTexts(
  recognized: readonly Segment[],
  polishedText: string,
): Record<string, string> | null {
  const lines = polishedText.split('\n');
  if (lines.length !== recognized.length) return null;
  return Object.fromEntries(recognized.map((s, i) => [s.index, lines[i]!]));
}
