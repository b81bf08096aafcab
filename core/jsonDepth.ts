/**
 * X5: how deep a JSON document may nest. Every reader of a JSON body or field walks the parsed
 * value recursively (text checks, schemas, the snapshot's copy), so a document thousands of
 * levels deep would end in a stack overflow (a 500) instead of a refusal. Nothing Quire takes
 * needs more than a handful of levels; 64 leaves room for any caller's metadata.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text opens more than `limit` arrays or objects inside one another. Read from
 * the text, before `JSON.parse`, without recursion: brackets inside strings do not count.
 */
export function jsonTooDeep(text: string, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i += 1; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth -= 1;
    }
  }
  return false;
}
