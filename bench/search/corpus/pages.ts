import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

/**
 * The search bench's pages, made from the book corpus beside this file (CORPUS.md): the same
 * page number gives the same page on every run and machine.
 *
 * A page is LINES_FROM_BOOKS consecutive lines of one excerpt (real sentences, so two words
 * meet as they do in books) and VOCABULARY_LINES lines of WORDS_PER_LINE words drawn from the
 * word table with weight sqrt(count): the books' own words, their long tail brought forward
 * so that a few million pages hold most of the 160,000 words, as an archive of many more
 * books than the excerpts would.
 */
export const LINES_FROM_BOOKS = 10;
export const VOCABULARY_LINES = 2;
export const WORDS_PER_LINE = 7;
export const LINES_PER_PAGE = LINES_FROM_BOOKS + VOCABULARY_LINES;

export interface Corpus {
  words: string[];
  counts: number[];
  excerpts: string[][];
  /** Cumulative sqrt(count) weights, for drawing a word. */
  cumulative: Float64Array;
}

export function loadCorpus(dir: string): Corpus {
  const words: string[] = [];
  const counts: number[] = [];
  for (const row of gunzipSync(readFileSync(`${dir}/words.tsv.gz`))
    .toString('utf8')
    .split('\n')) {
    if (!row) continue;
    const [word, count] = row.split('\t') as [string, string];
    words.push(word);
    counts.push(Number(count));
  }
  const excerpts = gunzipSync(readFileSync(`${dir}/passages.txt.gz`))
    .toString('utf8')
    .split('\n\n')
    .map((e) => e.split('\n').filter((l) => l.length > 0))
    .filter((e) => e.length >= LINES_FROM_BOOKS);
  const cumulative = new Float64Array(words.length);
  let sum = 0;
  for (let i = 0; i < words.length; i++) {
    sum += Math.sqrt(counts[i]!);
    cumulative[i] = sum;
  }
  return { words, counts, excerpts, cumulative };
}

/** A 32-bit mixing of a page number and a slot (splitmix-like), for deterministic draws. */
function draw(page: number, slot: number): number {
  let h = (Math.imul(page, 0x9e3779b1) ^ Math.imul(slot + 1, 0x85ebca77)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

function drawWord(corpus: Corpus, page: number, slot: number): string {
  const total = corpus.cumulative[corpus.cumulative.length - 1]!;
  const target = (draw(page, slot) / 0x1_0000_0000) * total;
  let lo = 0;
  let hi = corpus.cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (corpus.cumulative[mid]! > target) hi = mid;
    else lo = mid + 1;
  }
  return corpus.words[lo]!;
}

/** The lines of page `page`. */
export function pageLines(corpus: Corpus, page: number): string[] {
  const excerpt = corpus.excerpts[draw(page, 0) % corpus.excerpts.length]!;
  const from = draw(page, 1) % (excerpt.length - LINES_FROM_BOOKS + 1);
  const lines = excerpt.slice(from, from + LINES_FROM_BOOKS);
  for (let l = 0; l < VOCABULARY_LINES; l++) {
    const words: string[] = [];
    for (let w = 0; w < WORDS_PER_LINE; w++)
      words.push(drawWord(corpus, page, 2 + l * WORDS_PER_LINE + w));
    lines.push(words.join(' '));
  }
  return lines;
}
