/**
 * V8: the reading text of a page, where lines are read as running prose (the plain-text
 * export of an image page, the search text). A line's own text stays diplomatic (what that
 * line of the image says, its line-end hyphen kept); only here is a word hyphenated across a
 * line end read whole. Pure.
 */

/** Hyphen marks that split a word at a line end: hyphen-minus, hyphen, non-breaking hyphen, soft hyphen, not sign, double oblique hyphen (Fraktur). */
const LINE_END_HYPHEN = /([\p{L}\p{N}])[-\u2010\u2011\u00AD\u00AC\u2E17]$/u;

/**
 * The lines with each word split at a line end read whole on the line where it begins: the
 * second half (and the punctuation attached to it) joins the first, and the next line reads
 * on from there; a line left with nothing by that is dropped. A hyphen before a lowercase
 * continuation is a line-break hyphen and goes ("exam-" + "ple" -> "example"); before an
 * uppercase or digit continuation it is a real hyphen and stays ("North-" + "American").
 * Lines empty on the page stay, one for one.
 */
export function readingLines(lines: readonly string[]): string[] {
  const out = lines.map((line) => line.replace(/\s*[\r\n]+\s*/gu, ' ').trim());
  const emptied = new Set<number>();
  for (let i = 0; i < out.length; i++) {
    const current = out[i]!;
    if (!LINE_END_HYPHEN.test(current)) continue;
    let next = i + 1;
    while (next < out.length && out[next]!.length === 0) next++;
    if (next >= out.length) break;
    const match = /^(\S+)\s*/u.exec(out[next]!);
    if (!match) continue;
    const continuation = match[1]!;
    const first = continuation[0]!;
    if (!/[\p{L}\p{N}]/u.test(first)) continue;
    const isLower = first === first.toLowerCase() && first !== first.toUpperCase();
    out[i] = `${isLower ? current.slice(0, -1) : current}${continuation}`;
    out[next] = out[next]!.slice(match[0].length);
    if (out[next]!.length === 0) emptied.add(next);
  }
  return out.filter((_line, i) => !emptied.has(i));
}

/** The reading text: the reading lines one to a text line. */
export function readingText(lines: readonly string[]): string {
  return readingLines(lines).join('\n');
}
