import { describe, expect, it } from 'vitest';
import {
  joinHyphenatedLines,
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

  it('T2 polish joins a word hyphenated across lines and keeps the line count', () => {
    const lines = [
      'The history of all hither-',
      'to existing society is the',
      'history of class strug-',
      'gles.',
    ];
    const out = joinHyphenatedLines(lines);
    expect(out).toHaveLength(4);
    expect(out).toEqual([
      'The history of all hitherto',
      'existing society is the',
      'history of class struggles.',
      '',
    ]);
  });

  it('T2 polish keeps a real hyphen before an uppercase continuation and skips empty lines', () => {
    expect(joinHyphenatedLines(['a North-', '', 'American trade'])).toEqual([
      'a North-American',
      '',
      'trade',
    ]);
    expect(joinHyphenatedLines(['a dash -', 'next'])).toEqual(['a dash -', 'next']);
    expect(joinHyphenatedLines(['ends with hyphen-'])).toEqual(['ends with hyphen-']);
    expect(joinHyphenatedLines(['Verſchwä\u2E17', 'gerung und'])).toEqual([
      'Verſchwägerung',
      'und',
    ]);
    expect(joinHyphenatedLines(['soft\u00AD', 'ware'])).toEqual(['software', '']);
  });

  it('T2 polish of image lines is deterministic and idempotent', () => {
    const lines = ['  two  words-', ' joined   here ', 'plain'];
    const once = polishImageLines(lines);
    expect(once).toEqual(['two wordsjoined', 'here', 'plain']);
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

  it('T2 polishText keeps one output line per input line', () => {
    const input = 'first hyphen-\nated line\nlast';
    const output = polishText(input, 'image');
    expect(output.split('\n')).toHaveLength(3);
    expect(output).toBe('first hyphenated\nline\nlast');
    expect(polishText('one\ntwo', 'audio')).toBe('One.\nTwo.');
  });
});
