/**
 * V6: what the console says of an engine's quality, from the figures measured in
 * docs/engines.md (a unit test holds the two together). One source, so a page never claims
 * more than was measured.
 */
export interface MeasuredQuality {
  /** Word error rate on the set named, 0..1 (lower is better). */
  wer: number;
  set: string;
}

export const MEASURED_QUALITY = {
  pocketsphinx: { wer: 0.64, set: 'an 11 s excerpt of a 1961 speech (JFK inaugural)' },
} as const satisfies Record<string, MeasuredQuality>;

/**
 * V9: what docs/engines.md measured of each model the console lists, by provider and model code
 * (character error rate for images, word error rate for speech). A model not named here shows
 * no figure: nothing was measured of it.
 */
export const MODEL_QUALITY: Readonly<Record<string, { cer?: number; wer?: number; set: string }>> =
  {
    'tesseract:eng': { cer: 0.21, set: '20 real Fraktur lines (the wrong script: use frk)' },
    'tesseract:frk': { cer: 0.074, set: '20 real Fraktur lines' },
    'pocketsphinx:en': MEASURED_QUALITY.pocketsphinx,
  };

/** A model's measured figure as the console says it, or undefined when none was measured. */
export function measuredQuality(provider: string, model: string): string | undefined {
  const q = MODEL_QUALITY[`${provider}:${model}`];
  if (!q) return undefined;
  return q.cer !== undefined
    ? `CER ${q.cer.toFixed(3)} on ${q.set}`
    : `WER ${q.wer?.toFixed(2)} on ${q.set}`;
}

const IN_WORDS = ['none', 'one', 'two', 'three'];

/** A word error rate as a reader takes it: 0.64 is "about two words in three wrong". */
export function werInWords(wer: number): string {
  const wrong = Math.min(3, Math.max(0, Math.round(wer * 3)));
  if (wrong === 0) return 'fewer than one word in three wrong';
  if (wrong === 3) return 'nearly every word wrong';
  return `about ${IN_WORDS[wrong]} word${wrong === 1 ? '' : 's'} in three wrong`;
}
