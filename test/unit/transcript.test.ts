import { describe, expect, it } from 'vitest';
import type { Segment } from '../../core/annotation';
import {
  type Checkpoint,
  type CheckpointPayloads,
  type CheckpointStage,
  payloadsOf,
} from '../../core/checkpoints';
import {
  assembleTranscript,
  linesFromAnnotation,
  polishedTexts,
  polishInput,
  recognizedSegments,
} from '../../core/transcript';

const box = (y: number) => ({ x: 0, y, w: 100, h: 10 });

function checkpoint<S extends CheckpointStage>(
  stage: S,
  seq: number,
  payload: CheckpointPayloads[S],
): Checkpoint {
  // A generic stage cannot narrow the union; the parameters above keep each payload typed.
  return { stage, seq, attemptNumber: 1, payload } as Checkpoint;
}

const segmented = checkpoint('segment', 0, {
  lines: [{ box: box(0) }, { box: box(10) }, { box: box(20) }],
});
const line = (seq: number, text: string, confidence?: number | null) =>
  checkpoint('recognize', seq, { text, confidence });

describe('T2 J1 J2 a transcript assembled from checkpoints', () => {
  it('J1 an image page with every line recognized keeps the boxes, texts and confidences', () => {
    const saved = [segmented, line(0, 'one', 0.9), line(1, 'two', null), line(2, 'three', 0.5)];
    const transcript = assembleTranscript(saved, [], { usePolish: false });
    expect(transcript.total).toBe(3);
    expect(transcript.completed).toBe(3);
    expect(transcript.segments).toEqual([
      { index: 0, target: { kind: 'xywh', box: box(0) }, text: 'one', confidence: 0.9 },
      { index: 1, target: { kind: 'xywh', box: box(10) }, text: 'two' },
      { index: 2, target: { kind: 'xywh', box: box(20) }, text: 'three', confidence: 0.5 },
    ]);
  });

  it('J2 a line recognized in no attempt keeps the text it had; a new line without one is empty', () => {
    const previous: Segment[] = [
      { index: 1, target: { kind: 'xywh', box: box(10) }, text: 'typed by hand' },
    ];
    const saved = [segmented, line(0, 'one')];
    const transcript = assembleTranscript(saved, previous, { usePolish: false });
    expect(transcript.segments.map((s) => s.text)).toEqual(['one', 'typed by hand', '']);
    expect([transcript.completed, transcript.total]).toEqual([1, 3]);
  });

  it('T2 J3 polished texts replace recognized ones only when the workflow uses the polish', () => {
    const polish = checkpoint('polish', 0, { texts: { 0: 'One.', 1: 'Two.' } });
    const previous: Segment[] = [
      { index: 2, target: { kind: 'xywh', box: box(20) }, text: 'kept' },
    ];
    const saved = [segmented, line(0, 'one'), line(1, 'two'), polish];
    expect(
      assembleTranscript(saved, previous, { usePolish: true }).segments.map((s) => s.text),
    ).toEqual(['One.', 'Two.', 'kept']);
    expect(
      assembleTranscript(saved, previous, { usePolish: false }).segments.map((s) => s.text),
    ).toEqual(['one', 'two', 'kept']);
  });

  it('T2 audio segments come from one checkpoint, time-coded, polished by index', () => {
    const segments: Segment[] = [
      { index: 1, target: { kind: 't', start: 2.5, end: 4.7 }, text: 'second', speaker: 'B' },
      { index: 0, target: { kind: 't', start: 0, end: 2.5 }, text: 'first' },
    ];
    const saved = [
      checkpoint('submit', 0, { engineJobId: 'e-1' }),
      checkpoint('recognize', 0, { segments }),
      checkpoint('polish', 0, { texts: { 1: 'Second.' } }),
    ];
    const transcript = assembleTranscript(saved, [], { usePolish: true });
    expect(transcript.segments).toEqual([
      { index: 0, target: { kind: 't', start: 0, end: 2.5 }, text: 'first' },
      { index: 1, target: { kind: 't', start: 2.5, end: 4.7 }, text: 'Second.', speaker: 'B' },
    ]);
    expect([transcript.completed, transcript.total]).toEqual([2, 2]);
  });

  it('J1 no checkpoints make an empty transcript', () => {
    expect(assembleTranscript([], [], { usePolish: true })).toEqual({
      segments: [],
      completed: 0,
      total: 0,
      kept: 0,
    });
    expect(recognizedSegments([])).toEqual([]);
  });

  it('T2 lines already drawn on the page are reused; time-coded segments are not lines', () => {
    const segments: Segment[] = [
      { index: 0, target: { kind: 'xywh', box: box(0) }, text: 'a' },
      { index: 1, target: { kind: 't', start: 0, end: 1 }, text: 'b' },
    ];
    expect(linesFromAnnotation(segments)).toEqual([{ box: box(0) }]);
  });

  it('T2 the polish pass reads one segment per line and maps its lines back by index', () => {
    const recognized = recognizedSegments([line(3, 'a\nb'), line(1, 'c')]);
    expect(recognized.map((s) => s.index)).toEqual([1, 3]);
    expect(polishInput(recognized)).toBe('c\na b');
    expect(polishedTexts(recognized, 'C.\nA b.')).toEqual({ 1: 'C.', 3: 'A b.' });
    expect(polishedTexts(recognized, 'one line only')).toBeNull();
  });

  it('T2 checkpoint payloads are read by stage and seq', () => {
    const saved = [segmented, line(0, 'one'), line(2, 'three')];
    expect([...payloadsOf(saved, 'recognize').keys()]).toEqual([0, 2]);
    expect(payloadsOf(saved, 'segment').get(0)?.lines).toHaveLength(3);
    expect(payloadsOf(saved, 'polish').size).toBe(0);
  });
});
