import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MEASURED_QUALITY, werInWords } from '../../core/engineQuality';

describe('V6 what the console says of engine quality', () => {
  it('V6 the offline speech engine figure is the one measured in docs/engines.md, said as words wrong', () => {
    const doc = readFileSync(new URL('../../docs/engines.md', import.meta.url), 'utf8');
    const row = doc.split('\n').find((line) => line.includes('real recording, JFK inaugural'));
    expect(row).toBeDefined();
    expect(row).toContain(`**${MEASURED_QUALITY.pocketsphinx.wer}**`);
    expect(werInWords(MEASURED_QUALITY.pocketsphinx.wer)).toBe('about two words in three wrong');
    expect(werInWords(0.06)).toBe('fewer than one word in three wrong');
    expect(werInWords(0.3)).toBe('about one word in three wrong');
  });
});
