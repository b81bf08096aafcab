/**
 * The offline, deterministic polish pass (T2 `polish`): whitespace normalisation, and for
 * speech sentence casing and terminal punctuation. Pure: the same input always gives the
 * same output, so a retried attempt commits the same text.
 *
 * Every function takes the texts of a page's segments in reading order and returns the same
 * number of texts, so segment boundaries (boxes, time spans) stay where they were, and never
 * moves text from one segment to another (V8).
 */
import type { MediaKind } from '../core/media';

/** Collapses whitespace runs, trims, and removes spaces before closing punctuation. */
export function normalizeWhitespace(text: string): string {
  return text
    .normalize('NFC')
    .replace(/[\s\u00A0]+/gu, ' ')
    .replace(/ ([,.;:!?)\]}»”’])/gu, '$1')
    .replace(/([([{«„“]) /gu, '$1')
    .trim();
}

/** Capitalises the first letter of each sentence and a lone "i"; adds a full stop when a text has no terminal punctuation. */
export function sentenceCase(text: string): string {
  if (text.length === 0) return text;
  let result = text.replace(/(^|[.!?]\s+)(\p{Ll})/gu, (_m, before: string, letter: string) => {
    return `${before}${letter.toUpperCase()}`;
  });
  result = result.replace(/(^|[^\p{L}\p{N}'’])i(?=$|[^\p{L}\p{N}'’]|['’](?:m|ll|d|ve)\b)/gu, '$1I');
  if (!/[.!?…]["'”’)\]]*$/u.test(result)) result = `${result}.`;
  return result;
}

/**
 * Polishes the lines of an image page, each on its own (V8): a line's text is what that line
 * of the image says, so nothing moves between lines, not even half a word hyphenated at a
 * line end; the reading text joins those (core/readingText.ts).
 */
export function polishImageLines(lines: readonly string[]): string[] {
  return lines.map(normalizeWhitespace);
}

/** Polishes the utterances of a recording: whitespace, sentence casing, terminal punctuation. */
export function polishSpeechSegments(texts: readonly string[]): string[] {
  return texts.map((text) => sentenceCase(normalizeWhitespace(text)));
}

export function polishSegmentTexts(texts: readonly string[], kind: MediaKind): string[] {
  return kind === 'image' ? polishImageLines(texts) : polishSpeechSegments(texts);
}

/**
 * The provider-level polish (TranscriptionProvider.polish) over one text: segment texts
 * joined with "\n" (one segment per line); returns as many lines as it was given, so the
 * caller can split the result back onto its segments.
 */
export function polishText(text: string, kind: MediaKind): string {
  return polishSegmentTexts(text.split('\n'), kind).join('\n');
}

/**
 * The offline engines' `polish` (tesseract, pocketsphinx, whisper): the deterministic pass
 * above, free of charge, honouring cancellation.
 */
export async function offlinePolish(
  text: string,
  kind: MediaKind,
  signal: AbortSignal,
): Promise<{ text: string; cost: { units: number; unit: 'call' } }> {
  if (signal.aborted) throw signal.reason ?? new Error('aborted');
  return { text: polishText(text, kind), cost: { units: 1, unit: 'call' } };
}
