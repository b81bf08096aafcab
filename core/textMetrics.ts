/**
 * Character and word error rates (Levenshtein), used by tests and `bench/engines` to
 * measure engines honestly against ground truth. Pure.
 */

/** Edit distance (insertions, deletions, substitutions, each cost 1) between two sequences. */
export function levenshtein<T>(a: readonly T[], b: readonly T[]): number {
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let previous = new Array<number>(b.length + 1);
  let current = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) previous[j] = j;
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    const ai = a[i - 1];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (ai === b[j - 1] ? 0 : 1);
      const deletion = previous[j]! + 1;
      const insertion = current[j - 1]! + 1;
      current[j] = Math.min(substitution, deletion, insertion);
    }
    [previous, current] = [current, previous];
  }
  return previous[b.length]!;
}

export interface ErrorCount {
  /** Edit distance between reference and hypothesis. */
  errors: number;
  /** Length of the reference (characters or words). */
  length: number;
}

/** Unicode NFC, whitespace runs collapsed to one space, trimmed. */
export function normalizeText(text: string): string {
  return text.normalize('NFC').replace(/\s+/gu, ' ').trim();
}

export interface WordOptions {
  /** Compare words case-sensitively (default false: speech engines do not case). */
  caseSensitive?: boolean;
  /** Keep punctuation as part of words (default false). */
  keepPunctuation?: boolean;
}

export function wordsOf(text: string, options: WordOptions = {}): string[] {
  let normalized = normalizeText(text);
  if (!options.caseSensitive) normalized = normalized.toLowerCase();
  if (!options.keepPunctuation) {
    // Apostrophes inside words stay ("don't"); every other punctuation mark separates.
    normalized = normalized.replace(/(?<![\p{L}\p{N}])['’]|['’](?![\p{L}\p{N}])/gu, ' ');
    normalized = normalized.replace(/[^\p{L}\p{N}\s'’]/gu, ' ');
  }
  return normalized.split(/\s+/u).filter((word) => word.length > 0);
}

export function characterErrors(reference: string, hypothesis: string): ErrorCount {
  const ref = Array.from(normalizeText(reference));
  const hyp = Array.from(normalizeText(hypothesis));
  return { errors: levenshtein(ref, hyp), length: ref.length };
}

export function wordErrors(
  reference: string,
  hypothesis: string,
  options: WordOptions = {},
): ErrorCount {
  const ref = wordsOf(reference, options);
  const hyp = wordsOf(hypothesis, options);
  return { errors: levenshtein(ref, hyp), length: ref.length };
}

/** Errors divided by reference length; an empty reference scores 0 when the hypothesis is empty too, else 1. */
export function errorRate(count: ErrorCount): number {
  if (count.length === 0) return count.errors === 0 ? 0 : 1;
  return count.errors / count.length;
}

/** Character error rate of one hypothesis against its reference (may exceed 1). */
export function characterErrorRate(reference: string, hypothesis: string): number {
  return errorRate(characterErrors(reference, hypothesis));
}

/** Word error rate of one hypothesis against its reference (may exceed 1). */
export function wordErrorRate(
  reference: string,
  hypothesis: string,
  options: WordOptions = {},
): number {
  return errorRate(wordErrors(reference, hypothesis, options));
}

/** Corpus rate: all errors over all reference lengths, so long lines weigh more than short ones. */
export function corpusErrorRate(counts: readonly ErrorCount[]): number {
  return errorRate(
    counts.reduce((sum, c) => ({ errors: sum.errors + c.errors, length: sum.length + c.length }), {
      errors: 0,
      length: 0,
    }),
  );
}
