import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/**
 * Derives the search bench's corpus (CORPUS.md says what and why) from a folder of Project
 * Gutenberg plain-text books and an index of their source paths:
 *
 *   npx tsx bench/search/corpus/derive.ts <books dir> <index.tsv> <out dir>
 *
 * index.tsv has one `file<TAB>source path` line a book. Out: words.tsv.gz (word, count over
 * all kept books, count >= MIN_COUNT, by count), passages.txt.gz (EXCERPTS runs of
 * EXCERPT_LINES consecutive lines, one run a book at most, separated by a blank line) and
 * books.tsv.gz (each source path and whether it was kept, and why not).
 */
const MIN_COUNT = 3;
const MAX_WORDS = 160_000;
const EXCERPTS = 2_400;
const EXCERPT_LINES = 24;

const [booksDir, indexFile, outDir] = process.argv.slice(2);
if (!booksDir || !indexFile || !outDir) throw new Error('usage: derive.ts <books> <index> <out>');

/** The book's own text: Gutenberg's header, footer, licence and trademark lines removed. */
function bodyOf(text: string): string | null {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  let start = lines.findIndex((l) =>
    /^\*{3}\s*START OF (THIS|THE) PROJECT GUTENBERG/i.test(l.trim()),
  );
  if (start < 0) start = lines.findIndex((l) => /^\*END\*THE SMALL PRINT/i.test(l.trim()));
  if (start < 0) return null;
  let end = lines.findIndex(
    (l, i) =>
      i > start &&
      (/^\*{3}\s*END OF (THIS|THE) PROJECT GUTENBERG/i.test(l.trim()) ||
        /^End of (the )?Project Gutenberg/i.test(l.trim())),
  );
  if (end < 0) end = lines.length;
  return lines
    .slice(start + 1, end)
    .filter((l) => !/gutenberg|produced by|e-?text|ebook/i.test(l))
    .join('\n');
}

const counts = new Map<string, number>();
const seen = new Set<string>();
const books: Array<{ source: string; kept: string }> = [];
const kept: string[][] = [];
for (const row of readFileSync(indexFile, 'utf8').split('\n')) {
  if (!row) continue;
  const [file, source] = row.split('\t') as [string, string];
  const body = bodyOf(readFileSync(join(booksDir, `${file}.txt`), 'utf8'));
  if (!body) {
    books.push({ source, kept: 'no: no Gutenberg start marker' });
    continue;
  }
  const digest = createHash('sha256').update(body).digest('hex');
  if (seen.has(digest)) {
    books.push({ source, kept: 'no: same text as a book above' });
    continue;
  }
  seen.add(digest);
  books.push({ source, kept: 'yes' });
  for (const word of body.toLowerCase().match(/\p{L}+/gu) ?? [])
    counts.set(word, (counts.get(word) ?? 0) + 1);
  kept.push(
    body
      .split('\n')
      .map((l) => l.trim().replace(/\s+/g, ' '))
      .filter((l) => l.length >= 20 && /\p{L}{3}/u.test(l)),
  );
}

const words = [...counts]
  .filter(([, n]) => n >= MIN_COUNT)
  .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
  .slice(0, MAX_WORDS);

// One run of consecutive lines from every k-th kept book, from a point fixed by the book's
// number, so the sample is the same on every derivation of the same books.
const excerpts: string[] = [];
const step = Math.max(1, kept.length / EXCERPTS);
for (let b = 0; b < kept.length && excerpts.length < EXCERPTS; b += step) {
  const lines = kept[Math.floor(b)]!;
  if (lines.length < EXCERPT_LINES * 4) continue;
  const at = Math.floor(
    (((Math.floor(b) * 2654435761) % 1_000_003) / 1_000_003) * (lines.length - EXCERPT_LINES),
  );
  excerpts.push(lines.slice(at, at + EXCERPT_LINES).join('\n'));
}

writeFileSync(
  join(outDir, 'words.tsv.gz'),
  gzipSync(`${words.map(([w, n]) => `${w}\t${n}`).join('\n')}\n`, { level: 9 }),
);
writeFileSync(
  join(outDir, 'passages.txt.gz'),
  gzipSync(`${excerpts.join('\n\n')}\n`, { level: 9 }),
);
writeFileSync(
  join(outDir, 'books.tsv.gz'),
  gzipSync(`${books.map((b) => `${b.source.replace(/[\t\n\r]/g, ' ')}\t${b.kept}`).join('\n')}\n`, {
    level: 9,
  }),
);
process.stdout.write(
  `${JSON.stringify({
    books: books.length,
    kept: kept.length,
    distinctWords: counts.size,
    distinctWordsAtMinCount: [...counts.values()].filter((n) => n >= MIN_COUNT).length,
    wordsWritten: words.length,
    tokens: [...counts.values()].reduce((a, b) => a + b, 0),
    excerpts: excerpts.length,
  })}\n`,
);
