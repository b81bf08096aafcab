import { describe, expect, it } from 'vitest';
import {
  normalizeWhitespace,
  polishImageLines,
  polishSpeechSegments,
  polishText,
  sentenceCase,
} from '../../providers/polish';

describe('T2 offline polish pass', () => {
  it('T2 polish normalises whitespace and spaces before punctuation', () => {
    expect(normalizeWhitespace('  Hello \t world ,  again .\n')).toBe('Hello world, again.');
    expect(normalizeWhitespace('( quoted )')).toBe('(quoted)');
    expect(normalizeWhitespace('\u00a0')).toBe('');
  });

  it('V8 polish keeps each line to itself: a word hyphenated across lines stays split', () => {
    const lines = [
      'hurled back the branding reproach of Commun-',
      'ism, against the more advanced opposition par-',
      'ties, as well as against its reactionary adver-',
      'saries ?',
      'lish, French, German, Italian, Flemish and Dan-',
      'ish  languages.',
    ];
    expect(polishImageLines(lines)).toEqual([
      'hurled back the branding reproach of Commun-',
      'ism, against the more advanced opposition par-',
      'ties, as well as against its reactionary adver-',
      'saries?',
      'lish, French, German, Italian, Flemish and Dan-',
      'ish languages.',
    ]);
    expect(polishImageLines(['soft\u00AD', 'ware', 'a North-', 'American'])).toEqual([
      'soft\u00AD',
      'ware',
      'a North-',
      'American',
    ]);
  });

  it('T2 polish of image lines is deterministic and idempotent', () => {
    const lines = ['  two  words-', ' joined   here ', 'plain'];
    const once = polishImageLines(lines);
    expect(once).toEqual(['two words-', 'joined here', 'plain']);
    expect(polishImageLines(once)).toEqual(once);
  });

  it('T2 polish of speech adds sentence casing and terminal punctuation', () => {
    expect(sentenceCase('and so my fellow americans ask not')).toBe(
      'And so my fellow americans ask not.',
    );
    expect(sentenceCase('is it you? yes i think so')).toBe('Is it you? Yes I think so.');
    expect(sentenceCase("i'm here")).toBe("I'm here.");
    expect(sentenceCase('done!')).toBe('Done!');
    expect(polishSpeechSegments(['  hello   world ', '', 'what now?'])).toEqual([
      'Hello world.',
      '',
      'What now?',
    ]);
  });

  it('T2 V8 polishText keeps one output line per input line, each its own text', () => {
    const input = 'first hyphen-\nated  line\nlast';
    const output = polishText(input, 'image');
    expect(output.split('\n')).toHaveLength(3);
    expect(output).toBe('first hyphen-\nated line\nlast');
    expect(polishText('one\ntwo', 'audio')).toBe('One.\nTwo.');
  });
});
