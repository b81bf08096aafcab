import { describe, expect, it } from 'vitest';
import {
  type DiffLine,
  DiffTooLargeError,
  diffLines,
  MAX_DIFF_CELLS,
} from '../../web/components/diff';
import { httpErrorOf } from '../../web/lib/errors';

/** The console's revision diff (SPEC §9 C): bounded in size, same answers as before. */

/** The plain LCS diff, without trimming or bounds: the reference the bounded one must match. */
function reference(before: readonly string[], after: readonly string[]): DiffLine[] {
  const n = before.length;
  const m = after.length;
  const lcs = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i]![j] =
        before[i] === after[j]
          ? lcs[i + 1]![j + 1]! + 1
          : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (before[i] === after[j]) {
      out.push({ op: 'same', text: before[i]! });
      i++;
      j++;
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) out.push({ op: 'removed', text: before[i++]! });
    else out.push({ op: 'added', text: after[j++]! });
  }
  while (i < n) out.push({ op: 'removed', text: before[i++]! });
  while (j < m) out.push({ op: 'added', text: after[j++]! });
  return out;
}

const lines = (count: number, prefix: string) =>
  Array.from({ length: count }, (_, i) => `${prefix} ${i}`);

describe('revision diff bounds', () => {
  it('C a diff above its size is refused with diff_too_large (413), before any table is built', () => {
    const before = lines(3_000, 'old');
    const after = lines(3_000, 'new');
    expect(3_000 * 3_000).toBeGreaterThan(MAX_DIFF_CELLS);
    let refused: unknown;
    try {
      diffLines(before, after);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(DiffTooLargeError);
    expect(refused).toMatchObject({ removedLines: 3_000, addedLines: 3_000 });
    expect(httpErrorOf(refused)).toMatchObject({
      status: 413,
      body: { error: { code: 'diff_too_large' } },
    });
  });

  it('C a few changed lines in a long page are compared: the common beginning and end cost nothing', () => {
    const before = lines(5_000, 'line');
    const after = [...before];
    after[2_500] = 'corrected line';
    after.splice(4_000, 0, 'inserted line');
    const diff = diffLines(before, after);
    expect(diff.filter((l) => l.op !== 'same')).toEqual([
      { op: 'removed', text: 'line 2500' },
      { op: 'added', text: 'corrected line' },
      { op: 'added', text: 'inserted line' },
    ]);
    expect(diff.filter((l) => l.op === 'same')).toHaveLength(4_999);
  });

  it('C the bounded diff rebuilds both revisions and keeps as many lines as the plain LCS diff', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const vocabulary = ['a', 'b', 'c', 'd', ''];
    const pick = (length: number) =>
      Array.from({ length }, () => vocabulary[Math.floor(random() * vocabulary.length)]!);
    for (let round = 0; round < 300; round++) {
      const before = pick(Math.floor(random() * 12));
      const after = pick(Math.floor(random() * 12));
      // Several diffs can be right (equal lines may pair up differently); each must rebuild
      // both sides and keep as many lines as the plain LCS diff does.
      const diff = diffLines(before, after);
      expect(diff.filter((l) => l.op !== 'added').map((l) => l.text)).toEqual(before);
      expect(diff.filter((l) => l.op !== 'removed').map((l) => l.text)).toEqual(after);
      const kept = (d: DiffLine[]) => d.filter((l) => l.op === 'same').length;
      expect(kept(diff)).toBe(kept(reference(before, after)));
    }
    expect(diffLines([], [])).toEqual([]);
    expect(diffLines(['x'], ['x'])).toEqual([{ op: 'same', text: 'x' }]);
  });
});
