import {
  isCheckedLine,
  type LineAuthor,
  lineStateOf,
  type Segment,
  targetFragment,
} from './annotation';

/**
 * V1 and V4: how a line's state follows what was done to it, and how a save made from an
 * older revision lands on the current one line by line. Pure: db/revisions.ts stamps what it
 * writes, web/services/pages.ts merges before it writes.
 */

/** What a line says and where: its text and its place. */
function sameText(a: Segment, b: Segment): boolean {
  return a.text === b.text && targetFragment(a.target) === targetFragment(b.target);
}

/** What a person sees of a line: its text, where it is, its speaker. */
function sameContent(a: Segment, b: Segment): boolean {
  return sameText(a, b) && (a.speaker ?? null) === (b.speaker ?? null);
}

/** A line as a merge compares it: its content and its state (not who set it, nor when). */
function sameLine(a: Segment | undefined, b: Segment | undefined): boolean {
  if (!a || !b) return a === b;
  return sameContent(a, b) && lineStateOf(a) === lineStateOf(b);
}

/**
 * V1: the lines of a person's save. A line whose text and place are those of the revision it
 * was read from keeps that line's state (and confidence), whoever it is now said to speak
 * (V11: naming a speaker does not edit the text); any other line is `edited` by the person,
 * now.
 */
export function stampEdit(
  base: readonly Segment[],
  next: readonly Segment[],
  by: LineAuthor,
  at: string,
): Segment[] {
  const before = new Map(base.map((s) => [s.index, s]));
  return next.map((segment) => {
    const old = before.get(segment.index);
    if (old && sameText(old, segment)) {
      const kept: Segment = { ...segment };
      if (old.stamp) kept.stamp = old.stamp;
      else delete kept.stamp;
      if (old.confidence !== undefined) kept.confidence = old.confidence;
      return kept;
    }
    return { ...segment, stamp: { state: 'edited', by, at } };
  });
}

/** V1: the given lines marked `verified` by the person, now; the others unchanged. */
export function stampVerified(
  segments: readonly Segment[],
  indexes: readonly number[],
  by: LineAuthor,
  at: string,
): Segment[] {
  const chosen = new Set(indexes);
  return segments.map((s) =>
    chosen.has(s.index) ? { ...s, stamp: { state: 'verified', by, at } } : s,
  );
}

/**
 * V10: the lines of an imported file or text layer, stamped `imported` with their source
 * (`pdf`, `page`, `alto`, `hocr`), or `verified` by the import when it declares them ground
 * truth.
 */
export function stampImported(
  segments: readonly Segment[],
  source: string,
  at: string,
  options: { verified: boolean },
): Segment[] {
  const state = options.verified ? 'verified' : 'imported';
  return segments.map((s) => ({ ...s, stamp: { state, by: { kind: 'import', id: source }, at } }));
}

/**
 * The indexes of the lines a person's save is not to see replaced by an engine (V3): edited
 * or verified ones. An engine run asked for on an imported page reads its imported lines.
 */
export function humanLineIndexes(segments: readonly Segment[]): number[] {
  return segments.filter(isCheckedLine).map((s) => s.index);
}

/** V4: a line both saves changed, each its own way. */
export interface LineConflict {
  index: number;
  /** The line as the saver wants it; null when the save removes it. */
  mine: Segment | null;
  /** The line as it is now; null when it was removed since. */
  theirs: Segment | null;
}

export type LineMerge =
  | { state: 'merged'; segments: Segment[]; changed: number[] }
  | { state: 'lineConflict'; conflicts: LineConflict[] };

/**
 * V4: a save made from revision `base` onto the page as it is now (`theirs`). The lines the
 * save changed (added, removed, new text, place, speaker or state) replace those of the
 * current revision; the other lines stay as they are now. A line changed on both sides, each
 * differently, is a conflict, and nothing lands. A save from the current revision itself
 * merges to exactly what it says.
 */
export function mergeLines(
  base: readonly Segment[],
  theirs: readonly Segment[],
  mine: readonly Segment[],
): LineMerge {
  const baseBy = new Map(base.map((s) => [s.index, s]));
  const theirsBy = new Map(theirs.map((s) => [s.index, s]));
  const mineBy = new Map(mine.map((s) => [s.index, s]));
  const indexes = [...new Set([...baseBy.keys(), ...mineBy.keys()])];
  const changed = indexes.filter((i) => !sameLine(baseBy.get(i), mineBy.get(i)));
  const conflicts: LineConflict[] = [];
  for (const index of changed) {
    const was = baseBy.get(index);
    const now = theirsBy.get(index);
    const wanted = mineBy.get(index);
    if (!sameLine(was, now) && !sameLine(now, wanted)) {
      conflicts.push({ index, mine: wanted ?? null, theirs: now ?? null });
    }
  }
  if (conflicts.length > 0) return { state: 'lineConflict', conflicts };
  const out = new Map(theirsBy);
  for (const index of changed) {
    const wanted = mineBy.get(index);
    if (wanted) out.set(index, wanted);
    else out.delete(index);
  }
  return {
    state: 'merged',
    segments: [...out.values()].sort((a, b) => a.index - b.index),
    changed: changed.sort((a, b) => a - b),
  };
}

/** V5: the lines of a page by state, and whether every line of it is verified. */
export function countLineStates(segments: readonly Segment[]): {
  machine: number;
  imported: number;
  edited: number;
  verified: number;
  fullyVerified: boolean;
} {
  const counts = { machine: 0, imported: 0, edited: 0, verified: 0 };
  for (const s of segments) counts[lineStateOf(s)] += 1;
  return { ...counts, fullyVerified: segments.length > 0 && counts.verified === segments.length };
}

/**
 * R10: what one revision did to a page's lines, as the audit log counts it: lines a person
 * changed (now `edited`), lines confirmed (now `verified`), and any other line that changed
 * (put back by an undo, added or removed by a whole-page edit).
 */
export function revisionChanges(
  before: readonly Segment[],
  after: readonly Segment[],
): { edited: number; verified: number; other: number } {
  const counts = { edited: 0, verified: 0, other: 0 };
  const earlier = new Map(before.map((s) => [s.index, s]));
  for (const line of after) {
    const was = earlier.get(line.index);
    earlier.delete(line.index);
    if (sameLine(was, line)) continue;
    const state = lineStateOf(line);
    if (state === 'edited' || state === 'verified') counts[state] += 1;
    else counts.other += 1;
  }
  counts.other += earlier.size;
  return counts;
}

/** V11: how many lines of `after` are said to speak otherwise than in `before`. */
export function speakersChanged(before: readonly Segment[], after: readonly Segment[]): number {
  const earlier = new Map(before.map((s) => [s.index, s.speaker ?? null]));
  return after.filter((s) => earlier.has(s.index) && earlier.get(s.index) !== (s.speaker ?? null))
    .length;
}
