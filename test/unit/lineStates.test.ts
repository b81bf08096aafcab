import { describe, expect, it } from 'vitest';
import {
  buildAnnotationPage,
  type LineAuthor,
  type Segment,
  segmentsOf,
} from '../../core/annotation';
import type { Checkpoint } from '../../core/checkpoints';
import { exportPage } from '../../core/exports';
import {
  countLineStates,
  humanLineIndexes,
  mergeLines,
  revisionChanges,
  speakersChanged,
  stampEdit,
  stampVerified,
} from '../../core/lineStates';
import { assembleTranscript } from '../../core/transcript';

const engine: LineAuthor = { kind: 'engine', id: 'simulated' };
const alice: LineAuthor = { kind: 'api-key', id: '1' };
const bob: LineAuthor = { kind: 'api-key', id: '2' };
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-02T00:00:00.000Z';

const machineLine = (index: number, text: string, confidence = 0.8): Segment => ({
  index,
  target: { kind: 'xywh', box: { x: 0, y: index * 20, w: 100, h: 20 } },
  text,
  confidence,
  stamp: { state: 'machine', by: engine, at: T0 },
});
const page = () => [machineLine(0, 'one'), machineLine(1, 'two'), machineLine(2, 'three')];
const withText = (lines: Segment[], index: number, text: string) =>
  lines.map((s) => (s.index === index ? { ...s, text } : s));

describe('V1 line states', () => {
  it('V1 a save marks only the lines it changed edited, by the person and when; the others keep their state', () => {
    const base = page();
    const saved = stampEdit(base, withText(base, 1, 'TWO'), alice, T1);
    expect(saved.map((s) => s.stamp)).toEqual([
      base[0]!.stamp,
      { state: 'edited', by: alice, at: T1 },
      base[2]!.stamp,
    ]);
    expect(humanLineIndexes(saved)).toEqual([1]);
  });

  it('V11 naming a speaker for a span of lines keeps their state and confidence; a text change still edits', () => {
    const base = page();
    const named = base.map((s) => (s.index < 2 ? { ...s, speaker: 'Ada' } : s));
    const saved = stampEdit(base, named, alice, T1);
    expect(saved.map((s) => [s.speaker, s.stamp, s.confidence])).toEqual([
      ['Ada', base[0]!.stamp, 0.8],
      ['Ada', base[1]!.stamp, 0.8],
      [undefined, base[2]!.stamp, 0.8],
    ]);
    const both = stampEdit(base, withText(named, 0, 'ONE'), alice, T1);
    expect(both[0]!.stamp).toEqual({ state: 'edited', by: alice, at: T1 });
  });

  it('V1 verify marks the named lines verified; the state survives the AnnotationPage round trip', () => {
    const verified = stampVerified(page(), [0, 2], bob, T1);
    expect(verified.map((s) => s.stamp?.state)).toEqual(['verified', 'machine', 'verified']);
    const annotation = buildAnnotationPage('http://q.test/c/1', 3, verified);
    expect(annotation.items[0]).toMatchObject({
      'quire:state': 'verified',
      'quire:stateBy': bob,
      'quire:stateAt': T1,
    });
    expect(segmentsOf(annotation)).toEqual(verified);
    expect(countLineStates(verified)).toEqual({
      machine: 1,
      imported: 0,
      edited: 0,
      verified: 2,
      fullyVerified: false,
    });
  });

  it('V1 a line of a revision written before line states reads as machine', () => {
    const annotation = buildAnnotationPage('http://q.test/c/1', 1, [
      { index: 0, target: { kind: 't', start: 0, end: 1 }, text: 'old' },
    ]);
    expect(segmentsOf(annotation)[0]!.stamp).toBeUndefined();
    expect(countLineStates(segmentsOf(annotation)).machine).toBe(1);
  });

  it('V1 PAGE export: TextEquiv index and conf, the state in the line; ALTO: WC, CC and processing notes', () => {
    const lines = stampVerified(
      stampEdit(page(), withText(page(), 1, 'TWO'), alice, T1),
      [2],
      bob,
      T1,
    );
    const input = {
      canvasUri: 'http://q.test/c/1',
      kind: 'image' as const,
      width: 200,
      height: 100,
    };
    const pageXml = exportPage('page', { ...input, segments: lines }).body;
    expect(pageXml).toContain('<TextLine id="line_0" custom="quireState {state:machine;}"');
    expect(pageXml).toMatch(
      /<TextLine id="line_1" custom="quireState \{state:edited;\}" comments="edited by api-key:1 at 2026-01-02T00:00:00.000Z">/,
    );
    expect(pageXml).toContain('<TextEquiv index="1" conf="0.800">');
    expect(pageXml.match(/<TextEquiv index="1" conf="1.000">/g)).toHaveLength(2);
    const alto = exportPage('alto', { ...input, segments: lines }).body;
    expect(alto).toContain(
      '<processingStepDescription>edited by a person: line_1</processingStepDescription>',
    );
    expect(alto).toContain(
      '<processingStepDescription>verified by a person: line_2</processingStepDescription>',
    );
    expect(alto).toContain('CONTENT="one" WC="0.80"/>');
    expect(alto).toContain('CONTENT="TWO" WC="1.00" CC="000"/>');
  });
});

describe('V4 line-level merge', () => {
  it('V4 two saves of different lines from the same revision both land, each on top of the other', () => {
    const base = page();
    const first = stampEdit(base, withText(base, 0, 'ONE'), alice, T1);
    const second = stampEdit(base, withText(base, 2, 'THREE'), bob, T1);
    const merged = mergeLines(base, first, second);
    expect(merged.state).toBe('merged');
    if (merged.state !== 'merged') return;
    expect(merged.segments.map((s) => s.text)).toEqual(['ONE', 'two', 'THREE']);
    expect(merged.segments.map((s) => s.stamp?.by)).toEqual([alice, engine, bob]);
    expect(merged.changed).toEqual([2]);
  });

  it('V4 the same line changed by both is a conflict with the other text, and nothing merges', () => {
    const base = page();
    const first = stampEdit(base, withText(base, 1, 'by alice'), alice, T1);
    const second = stampEdit(base, withText(withText(base, 1, 'by bob'), 2, 'x'), bob, T1);
    const merged = mergeLines(base, first, second);
    expect(merged).toEqual({
      state: 'lineConflict',
      conflicts: [{ index: 1, mine: second[1], theirs: first[1] }],
    });
  });

  it('V4 the same change on both sides, a verify of an untouched line, and a removed line merge cleanly', () => {
    const base = page();
    const first = stampEdit(base, withText(base, 1, 'same'), alice, T1);
    const second = stampEdit(base, withText(base, 1, 'same'), bob, T1);
    expect(mergeLines(base, first, second).state).toBe('merged');
    const verified = stampVerified(base, [0], bob, T1);
    const merged = mergeLines(base, first, verified);
    expect(merged.state === 'merged' && merged.segments.map((s) => s.stamp?.state)).toEqual([
      'verified',
      'edited',
      'machine',
    ]);
    // Verifying a line someone else changed since confirms text the verifier never saw.
    expect(mergeLines(base, first, stampVerified(base, [1], bob, T1)).state).toBe('lineConflict');
    const removed = mergeLines(base, first, base.slice(0, 2));
    expect(removed.state === 'merged' && removed.segments.map((s) => s.index)).toEqual([0, 1]);
  });
});

describe('V3 protected lines on a re-run', () => {
  it('V3 lines a person edited or verified keep their text and state; the others take the engine reading', () => {
    const previous = stampVerified(
      stampEdit(page(), withText(page(), 0, 'fixed'), alice, T0),
      [1],
      bob,
      T0,
    );
    const saved = [
      {
        stage: 'segment',
        seq: 0,
        attemptNumber: 1,
        payload: {
          lines: previous.map((s) => ({
            box: (s.target as { box: { x: number; y: number; w: number; h: number } }).box,
          })),
        },
      },
      {
        stage: 'recognize',
        seq: 2,
        attemptNumber: 1,
        payload: { text: 'engine three', confidence: 0.5 },
      },
    ] as Checkpoint[];
    const transcript = assembleTranscript(saved, previous, {
      usePolish: false,
      protectedLines: humanLineIndexes(previous),
    });
    expect(transcript).toMatchObject({ completed: 3, total: 3, kept: 2 });
    expect(transcript.segments.slice(0, 2)).toEqual(previous.slice(0, 2));
    expect(transcript.segments[2]).toMatchObject({ text: 'engine three', confidence: 0.5 });
    expect(transcript.segments[2]!.stamp).toBeUndefined();
    // overwriteHumanLines: nothing protected, every line the engine's.
    const all = assembleTranscript(saved, previous, { usePolish: false, protectedLines: [] });
    expect(all.kept).toBe(0);
  });
});

describe('R10 what a revision did, as the audit log counts it', () => {
  it('R10 revisionChanges counts the lines a revision edited and verified, and any other change', () => {
    const base = page();
    const edited = stampEdit(base, withText(withText(base, 0, 'ONE'), 2, 'THREE'), alice, T1);
    expect(revisionChanges(base, edited)).toEqual({ edited: 2, verified: 0, other: 0 });
    const verified = stampVerified(edited, [0, 1], bob, T1);
    expect(revisionChanges(edited, verified)).toEqual({ edited: 0, verified: 2, other: 0 });
    // An undo puts a machine line back; a whole-page edit may drop a line.
    expect(revisionChanges(edited, [base[0]!, edited[1]!, edited[2]!])).toEqual({
      edited: 0,
      verified: 0,
      other: 1,
    });
    expect(revisionChanges(base, base.slice(0, 2))).toEqual({ edited: 0, verified: 0, other: 1 });
    expect(revisionChanges(base, base)).toEqual({ edited: 0, verified: 0, other: 0 });
  });
});

describe('V11 a revision that names speakers', () => {
  it('V11 speakersChanged counts the lines whose speaker a revision named, renamed or removed, and stampEdit keeps their state', () => {
    const base = page();
    const named = stampEdit(
      base,
      base.map((s) => (s.index < 2 ? { ...s, speaker: 'Interviewer' } : s)),
      alice,
      T1,
    );
    expect(speakersChanged(base, named)).toBe(2);
    expect(named.map((s) => s.stamp)).toEqual(base.map((s) => s.stamp));
    const renamed = named.map((s) => (s.speaker ? { ...s, speaker: 'Mrs Ada Byron' } : s));
    expect(speakersChanged(named, renamed)).toBe(2);
    expect(speakersChanged(renamed, base)).toBe(2);
    expect(speakersChanged(base, withText(base, 0, 'ONE'))).toBe(0);
  });
});
