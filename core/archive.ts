/**
 * SPEC §20 (F1-F3): the pure parts of the archive. Descriptive metadata as label/value pairs
 * with the Dublin Core element names offered, the text-search configuration an item's
 * language calls for, and the marked snippets search returns. No I/O.
 */

/** One label/value pair of an item's or a collection's descriptive metadata, in order. */
export interface MetadataEntry {
  label: string;
  value: string;
}

/** F2: the fifteen Dublin Core elements, offered as labels in the console (any label is taken). */
export const DUBLIN_CORE_ELEMENTS = [
  'Title',
  'Creator',
  'Subject',
  'Description',
  'Publisher',
  'Contributor',
  'Date',
  'Type',
  'Format',
  'Identifier',
  'Source',
  'Language',
  'Relation',
  'Coverage',
  'Rights',
] as const;

export const METADATA_LIMITS = { entries: 100, label: 200, value: 10_000 } as const;

/**
 * F3: PostgreSQL's built-in stemming configurations by the primary subtag of a BCP 47
 * language tag. A language without one (or no language) is matched `simple`: word for word.
 */
const SEARCH_CONFIGS: Record<string, string> = {
  ar: 'arabic',
  hy: 'armenian',
  eu: 'basque',
  ca: 'catalan',
  da: 'danish',
  nl: 'dutch',
  en: 'english',
  fi: 'finnish',
  fr: 'french',
  de: 'german',
  // V9: Fraktur is a script of German (tesseract's `frk` model); its words are German words.
  frk: 'german',
  el: 'greek',
  hi: 'hindi',
  hu: 'hungarian',
  id: 'indonesian',
  ga: 'irish',
  it: 'italian',
  lt: 'lithuanian',
  ne: 'nepali',
  no: 'norwegian',
  nb: 'norwegian',
  nn: 'norwegian',
  pt: 'portuguese',
  ro: 'romanian',
  ru: 'russian',
  sr: 'serbian',
  es: 'spanish',
  sv: 'swedish',
  ta: 'tamil',
  tr: 'turkish',
  yi: 'yiddish',
};

export const SIMPLE_SEARCH_CONFIG = 'simple';

/** Every configuration a page can be indexed in: what a search probes. */
export const SEARCH_CONFIG_NAMES: readonly string[] = [
  SIMPLE_SEARCH_CONFIG,
  ...new Set(Object.values(SEARCH_CONFIGS)),
];

export function searchConfigFor(language: string | null | undefined): string {
  if (!language) return SIMPLE_SEARCH_CONFIG;
  const primary = language.trim().toLowerCase().split(/[-_]/)[0] ?? '';
  return SEARCH_CONFIGS[primary] ?? SIMPLE_SEARCH_CONFIG;
}

/**
 * F3: the delimiters `ts_headline` is asked to put around matched words. They are control
 * characters removed from the line before it is marked, so a line's own text can never
 * fake a mark, and no HTML ever travels in a snippet.
 */
export const MARK_START = '\u0002';
export const MARK_STOP = '\u0003';
/**
 * Angle brackets travel through `ts_headline` as these two (the parser would take `<word>`
 * for a tag and drop it) and are given back here.
 */
export const LT_STANDIN = '\u0004';
export const GT_STANDIN = '\u0005';

export interface Snippet {
  /** The line's text around the match (the whole line when it is short). */
  text: string;
  /** The matched words, as UTF-16 offsets into `text`. */
  highlights: Array<{ start: number; length: number }>;
}

/** Turns a headline marked with MARK_START/MARK_STOP into text and offsets. */
export function parseMarkedSnippet(marked: string): Snippet {
  let text = '';
  const highlights: Snippet['highlights'] = [];
  let open = -1;
  for (const char of marked) {
    if (char === MARK_START) {
      open = text.length;
    } else if (char === MARK_STOP) {
      if (open >= 0 && text.length > open) {
        highlights.push({ start: open, length: text.length - open });
      }
      open = -1;
    } else {
      text += char === LT_STANDIN ? '<' : char === GT_STANDIN ? '>' : char;
    }
  }
  return { text, highlights };
}

/** The parts of a snippet in order, each marked or not: what the console draws. */
export function snippetParts(snippet: Snippet): Array<{ text: string; marked: boolean }> {
  const parts: Array<{ text: string; marked: boolean }> = [];
  let at = 0;
  for (const h of snippet.highlights) {
    if (h.start > at) parts.push({ text: snippet.text.slice(at, h.start), marked: false });
    parts.push({ text: snippet.text.slice(h.start, h.start + h.length), marked: true });
    at = h.start + h.length;
  }
  if (at < snippet.text.length) parts.push({ text: snippet.text.slice(at), marked: false });
  return parts;
}
