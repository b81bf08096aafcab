import { DomainError } from '@quire/core/errors';

/** A line diff (longest common subsequence) for comparing two revisions of a transcript. */
export type DiffLine = { op: 'same' | 'added' | 'removed'; text: string };

/**
 * The largest comparison table the diff builds: lines changed in the old revision times lines
 * changed in the new one, after the common beginning and end are set aside. 4 M cells is 16 MB
 * and well under a second; an edit of a few lines in a page of thousands stays far below it.
 */
export const MAX_DIFF_CELLS = 4_000_000;

/** The two revisions differ over too many lines to compare here (413 `diff_too_large`). */
export class DiffTooLargeError extends DomainError {
  override name = 'DiffTooLargeError';
  constructor(
    readonly removedLines: number,
    readonly addedLines: number,
  ) {
    super(
      'diff_too_large',
      `the revisions differ over ${removedLines} and ${addedLines} lines, more than can be compared at once; export both revisions to compare them elsewhere`,
    );
  }
}

/**
 * The lines of `before` and `after` as kept, removed and added. The common beginning and end
 * cost nothing; the differing middle is compared with a table of its size, and a middle
 * whose table would exceed `maxCells` is refused with `DiffTooLargeError` rather than taking
 * the server's memory and time (the table grows with the product of the two lengths).
 */
export function diffLines(
  before: readonly string[],
  after: readonly string[],
  maxCells = MAX_DIFF_CELLS,
): DiffLine[] {
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head++;
  let tail = 0;
  while (
    tail < before.length - head &&
    tail < after.length - head &&
    before[before.length - 1 - tail] === after[after.length - 1 - tail]
  ) {
    tail++;
  }
  const a = before.slice(head, before.length - tail);
  const b = after.slice(head, after.length - tail);
  const n = a.length;
  const m = b.length;
  if (n * m > maxCells) throw new DiffTooLargeError(n, m);
  // lcs[i * (m + 1) + j]: length of the LCS of a[i..] and b[j..].
  const width = m + 1;
  const lcs = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * width + j] =
        a[i] === b[j]
          ? lcs[(i + 1) * width + j + 1]! + 1
          : Math.max(lcs[(i + 1) * width + j]!, lcs[i * width + j + 1]!);
    }
  }
  const out: DiffLine[] = before.slice(0, head).map((text) => ({ op: 'same' as const, text }));
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: 'same', text: a[i]! });
      i++;
      j++;
    } else if (lcs[(i + 1) * width + j]! >= lcs[i * width + j + 1]!) {
      out.push({ op: 'removed', text: a[i++]! });
    } else {
      out.push({ op: 'added', text: b[j++]! });
    }
  }
  while (i < n) out.push({ op: 'removed', text: a[i++]! });
  while (j < m) out.push({ op: 'added', text: b[j++]! });
  for (const text of before.slice(before.length - tail)) out.push({ op: 'same', text });
  return out;
}
