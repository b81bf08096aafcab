import type { Segment } from './annotation';
import { DomainError } from './errors';
import { readingText } from './readingText';

/**
 * R6: what text Quire accepts, checked where text comes in (path ids, queries, JSON bodies,
 * form fields, transcript files) so PostgreSQL never sees what it refuses. PostgreSQL's text
 * and jsonb hold no NUL (U+0000), and a lone UTF-16 surrogate has no UTF-8 form (jsonb refuses
 * its escape; text would get U+FFFD instead of what was sent). Both are refused as 400
 * `invalid_text`, naming where, never quoting the text.
 */

export type TextFault = 'nul' | 'lone_surrogate';

/** Characters of one line (a segment's text), through the API, the console and imports alike. */
export const MAX_LINE_CHARS = 20_000;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function textFault(value: string): TextFault | undefined {
  if (value.includes('\u0000')) return 'nul';
  if (LONE_SURROGATE.test(value)) return 'lone_surrogate';
  return undefined;
}

const FAULT_WORDS: Record<TextFault, string> = {
  nul: 'holds a NUL character',
  lone_surrogate: 'holds a lone UTF-16 surrogate',
};

export function describeTextFault(fault: TextFault): string {
  return FAULT_WORDS[fault];
}

export class InvalidTextError extends DomainError {
  override name = 'InvalidTextError';
  constructor(where: string, fault: TextFault) {
    super('invalid_text', `${where} ${describeTextFault(fault)}`);
  }
}

/**
 * The first string (a value or an object key) in a parsed JSON value that Quire refuses, with
 * its path (`segments.3.text`). Walks iteratively: a deeply nested body cannot exhaust the stack.
 */
export function findTextFault(value: unknown): { path: string; fault: TextFault } | undefined {
  const stack: Array<{ value: unknown; path: string }> = [{ value, path: '' }];
  const join = (path: string, key: string | number) => (path ? `${path}.${key}` : String(key));
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'string') {
      const fault = textFault(v);
      if (fault) return { path: path || 'body', fault };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: join(path, i) });
    } else if (v !== null && typeof v === 'object') {
      for (const [key, inner] of Object.entries(v)) {
        const fault = textFault(key);
        // The key itself is not echoed: it is the refused text.
        if (fault) return { path: join(path, '(a key)'), fault };
        stack.push({ value: inner, path: join(path, safeKey(key)) });
      }
    }
  }
  return undefined;
}

function safeKey(key: string): string {
  return /^[A-Za-z0-9_-]{1,40}$/.test(key) ? key : '(a key)';
}

/** Throws `invalid_text` for the first refused string in a parsed value. */
export function assertAcceptedText(value: unknown, where = 'body'): void {
  const found = findTextFault(value);
  if (found) {
    throw new InvalidTextError(found.path === 'body' ? where : found.path, found.fault);
  }
}

/** Each line's text and speaker, `segments.3.text` named in the refusal. */
export function assertLinesAccepted(segments: readonly Pick<Segment, 'text' | 'speaker'>[]): void {
  segments.forEach((segment, i) => {
    const fault = textFault(segment.text);
    if (fault) throw new InvalidTextError(`segments.${i}.text`, fault);
    const speakerFault = segment.speaker === undefined ? undefined : textFault(segment.speaker);
    if (speakerFault) throw new InvalidTextError(`segments.${i}.speaker`, speakerFault);
  });
}

/**
 * R6: every accepted text fits what the database indexes. A page's search text is the
 * document PostgreSQL turns into `search_tsv`, and a tsvector holds at most 1 MB; each
 * distinct word costs its bytes plus about 8, so 150,000 bytes of text stay well inside it
 * whatever the words (a test writes the worst case). Human edits and imports beyond it are
 * refused (413 `page_text_too_large`); an engine's revision is never refused, and beyond it
 * only its first 150,000 bytes are searchable.
 */
export const MAX_PAGE_TEXT_BYTES = 150_000;

export function pageTextBytes(segments: readonly Pick<Segment, 'text'>[]): number {
  let total = Math.max(0, segments.length - 1);
  for (const s of segments) total += Buffer.byteLength(s.text, 'utf8');
  return total;
}

export class PageTextTooLargeError extends DomainError {
  override name = 'PageTextTooLargeError';
  constructor() {
    super(
      'page_text_too_large',
      `a page's lines may hold at most ${MAX_PAGE_TEXT_BYTES} bytes of text in all`,
    );
  }
}

export function assertPageTextFits(segments: readonly Pick<Segment, 'text'>[]): void {
  if (pageTextBytes(segments) > MAX_PAGE_TEXT_BYTES) throw new PageTextTooLargeError();
}

/** The page's text as the search index reads it: its lines, at most MAX_PAGE_TEXT_BYTES. */
export function searchTextOf(segments: readonly Pick<Segment, 'text'>[]): string {
  // V8: searched as read, a word hyphenated across lines is found whole.
  const text = readingText(segments.map((s) => s.text));
  if (Buffer.byteLength(text, 'utf8') <= MAX_PAGE_TEXT_BYTES) return text;
  // Cut on a character boundary: a trailing partial UTF-8 sequence decodes as U+FFFD.
  const cut = Buffer.from(text, 'utf8')
    .subarray(0, MAX_PAGE_TEXT_BYTES)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  // A word cut in half would index a word nobody wrote.
  const lastSpace = cut.search(/\s\S*$/);
  return lastSpace > 0 ? cut.slice(0, lastSpace) : cut;
}
