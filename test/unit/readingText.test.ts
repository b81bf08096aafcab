import { describe, expect, it } from 'vitest';
import { readingLines, readingText } from '../../core/readingText';

describe('V8 reading text', () => {
  it('V8 a word hyphenated across lines is read whole on the line where it begins', () => {
    expect(
      readingLines([
        'The history of all hither-',
        'to existing society is the',
        'history of class strug-',
        'gles.',
      ]),
    ).toEqual([
      'The history of all hitherto',
      'existing society is the',
      'history of class struggles.',
    ]);
  });

  it('V8 the manifesto page reads Communism, parties, adversaries and Danish whole', () => {
    const text = readingText([
      'hurled back the branding reproach of Commun-',
      'ism, against the more advanced opposition par-',
      'ties, as well as against its reactionary adver-',
      'saries?',
      'lish, French, German, Italian, Flemish and Dan-',
      'ish languages.',
    ]);
    expect(text).toBe(
      [
        'hurled back the branding reproach of Communism,',
        'against the more advanced opposition parties,',
        'as well as against its reactionary adversaries?',
        'lish, French, German, Italian, Flemish and Danish',
        'languages.',
      ].join('\n'),
    );
  });

  it('V8 a real hyphen before an uppercase continuation stays; lines empty on the page stay', () => {
    expect(readingLines(['a North-', '', 'American trade'])).toEqual([
      'a North-American',
      '',
      'trade',
    ]);
    expect(readingLines(['a dash -', 'next'])).toEqual(['a dash -', 'next']);
    expect(readingLines(['ends with hyphen-'])).toEqual(['ends with hyphen-']);
    expect(readingLines(['Verſchwä\u2E17', 'gerung und'])).toEqual(['Verſchwägerung', 'und']);
    expect(readingLines(['soft\u00AD', 'ware'])).toEqual(['software']);
    expect(readingLines(['one', '', 'two'])).toEqual(['one', '', 'two']);
  });

  it('V8 the reading text leaves its input lines as they were', () => {
    const lines = ['Commun-', 'ism, against'];
    readingText(lines);
    expect(lines).toEqual(['Commun-', 'ism, against']);
  });
});
