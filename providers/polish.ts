/**
 * The offline, deterministic polish pass (T2 `polish`): whitespace normalisation, words
 * hyphenated across line ends joined, and for speech sentence casing and terminal
 * punctuation. Pure: the same input always gives the same output, so a retried attempt
 * commits the same text.
 *
 * Every function takes the texts of a page's segments in reading order and returns the same
 * number of texts, so segment boundaries (boxes, time spans) stay where they were.
 */
import type { MediaKind } from '../core/media';

/** Hyphen marks that split a word at a line end: hyphen-minus, hyphen, non-breaking hyphen, soft hyphen, not sign, double oblique hyphen (Fraktur). */
const LINE_END_HYPHEN = /([\p{L}\p{N}])[-\u2010\u2011\u00AD\u00AC\u2E17]$/u;

/** Collapses whitespace runs, trims, and removes spaces before closing punctuation. */
export function normalizeWhitespace(text: string): string {
  return text
    .normalize('NFC')
    .replace(/[\s\u00A0]+/gu, ' ')
    .replace(/ ([,.;:!?)\]}»”’])/gu, '$1')
    .replace(/([([{«„“]) /gu, '$1')
    .trim();
}

/**
 * Joins words split by a hyphen at the end of a line with their second half at the start of
 * the next non-empty line. The second half (with punctuation attached to it) moves to the
 * earlier line; the later line keeps its remaining words (and may become empty). A hyphen
 * before a lowercase continuation is a line-break hyphen and is removed ("exam-" + "ple"
 * -> "example"); before an uppercase or digit continuation it is a real hyphen and stays
 * ("North-" + "American" -> "North-American").
 */
export function joinHyphenatedLines(lines: readonly string[]): string[] {
  const out = lines.map((line) => line.trimEnd());
  for (let i = 0; i < out.length; i++) {
    const current = out[i]!;
    if (!LINE_END_HYPHEN.test(current)) continue;
    let next = i + 1;
    while (next < out.length && out[next]!.trim().length === 0) next++;
    if (next >= out.length) break;
    const following = out[next]!.trimStart();
    const match = /^(\S+)\s*/u.exec(following);
    if (!match) continue;
    const continuation = match[1]!;
    const first = continuation[0]!;
    if (!/[\p{L}\p{N}]/u.test(first)) continue;
    const isLower = first === first.toLowerCase() && first !== first.toUpperCase();
    const head = isLower ? current.slice(0, -1) : current;
    out[i] = `${head}${continuation}`;
    out[next] = following.slice(match[0].length);
  }
  return out;
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

/** Polishes the lines of an image page: whitespace, then hyphenation across line ends. */
export function polishImageLines(lines: readonly string[]): string[] {
  return joinHyphenatedLines(lines.map(normalizeWhitespace)).map(normalizeWhitespace);
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
