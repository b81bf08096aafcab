import { describe, expect, it } from 'vitest';
import {
  characterErrorRate,
  characterErrors,
  corpusErrorRate,
  levenshtein,
  wordErrorRate,
  wordErrors,
  wordsOf,
} from '../../core/textMetrics';

describe('Q2 text metrics (CER/WER) used to measure engines', () => {
  it('Q2 levenshtein counts insertions, deletions and substitutions', () => {
    expect(levenshtein([...'kitten'], [...'sitting'])).toBe(3);
    expect(levenshtein([], [...'abc'])).toBe(3);
    expect(levenshtein([...'abc'], [])).toBe(3);
    expect(levenshtein([...'same'], [...'same'])).toBe(0);
    expect(levenshtein(['a', 'b'], ['b', 'a'])).toBe(2);
  });

  it('Q2 CER is edits over reference characters, whitespace-normalised', () => {
    expect(characterErrorRate('hello world', 'hello  world\n')).toBe(0);
    expect(characterErrorRate('abcd', 'abed')).toBeCloseTo(0.25);
    expect(characterErrors('abcd', '')).toEqual({ errors: 4, length: 4 });
    expect(characterErrorRate('', '')).toBe(0);
    expect(characterErrorRate('', 'x')).toBe(1);
    // Code points, not UTF-16 units: a long s counts once.
    expect(characterErrorRate('ſein', 'sein')).toBeCloseTo(0.25);
    // Decomposed and composed umlauts are the same character after NFC.
    expect(characterErrorRate('f\u00fcr', 'fu\u0308r')).toBe(0);
  });

  it('Q2 WER ignores case and punctuation by default, keeps inner apostrophes', () => {
    expect(wordsOf("And so, my fellow Americans: don't ask!")).toEqual([
      'and',
      'so',
      'my',
      'fellow',
      'americans',
      "don't",
      'ask',
    ]);
    expect(wordErrorRate('The quick brown fox.', 'the quick brown fox')).toBe(0);
    expect(wordErrorRate('the quick brown fox', 'the quack brown')).toBeCloseTo(0.5);
    expect(wordErrors('a b c', 'a x b c')).toEqual({ errors: 1, length: 3 });
    expect(wordErrorRate('The fox', 'the fox', { caseSensitive: true })).toBeCloseTo(0.5);
    expect(wordErrorRate('one', 'two three four')).toBe(3);
  });

  it('Q2 corpus rate weighs by reference length', () => {
    const rate = corpusErrorRate([
      { errors: 1, length: 10 },
      { errors: 1, length: 2 },
    ]);
    expect(rate).toBeCloseTo(2 / 12);
    expect(corpusErrorRate([])).toBe(0);
  });
});
