import { METADATA_LIMITS, type MetadataEntry } from './archive';
import { DomainError } from './errors';
import { languageTag } from './jobRequest';

/**
 * F5: a spreadsheet (CSV) that describes many uploaded items in one step. One row per item,
 * matched to its file by a `file` (or `filename`) column, else by an `identifier` column (the
 * file's name with or without its extension). Dublin Core element names (`title`, `creator`,
 * `date`, `dc:subject`...) are recognised: `title` and `language` set the item's own fields,
 * the others become label/value entries under their Dublin Core label; any other column is
 * kept as a label/value entry under its header. A bad cell refuses the whole sheet, naming its
 * row (as a spreadsheet numbers it, the header being row 1) and its column; messages never
 * quote a cell.
 */

export interface ItemDescription {
  title?: string;
  language?: string;
  metadata: MetadataEntry[];
}

/** Rows by the file name they describe (as uploaded). */
export type DescriptionSheet = Map<string, ItemDescription & { row: number }>;

const DUBLIN_CORE = [
  'title',
  'creator',
  'subject',
  'description',
  'publisher',
  'contributor',
  'date',
  'type',
  'format',
  'identifier',
  'source',
  'language',
  'relation',
  'coverage',
  'rights',
] as const;

const MAX_ROWS = 10_000;
export const MAX_CSV_BYTES = 4 * 1024 * 1024;

const refuse = (message: string, details: Record<string, unknown>) =>
  new DomainError('invalid_csv', message, details);

/** RFC 4180 records: quoted fields may hold commas, quotes ("") and line breaks. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (quoted) throw refuse(`row ${rows.length + 1}: a quoted field is not closed`, {});
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows.filter((r) => r.some((cell) => cell.trim() !== ''));
}

/** W3C-DTF as Dublin Core recommends: YYYY, YYYY-MM or YYYY-MM-DD (a real day), or a range a/b. */
export function isDublinCoreDate(value: string): boolean {
  return value.split('/').every((part) => {
    const m = /^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$/.exec(part.trim());
    if (!m) return false;
    const [, y, mo, d] = m;
    if (mo === undefined) return true;
    const month = Number(mo);
    if (month < 1 || month > 12) return false;
    if (d === undefined) return true;
    const day = Number(d);
    const days = new Date(Date.UTC(Number(y), month, 0)).getUTCDate();
    return day >= 1 && day <= days;
  });
}

function dublinCoreName(header: string): string | undefined {
  const name = header
    .trim()
    .toLowerCase()
    .replace(/^dc(terms)?[:.]/, '');
  return (DUBLIN_CORE as readonly string[]).includes(name) ? name : undefined;
}

const labelOf = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/**
 * Reads a description sheet for the files uploaded with it (`fileNames`, in upload order).
 * Throws `invalid_csv` (422) naming the row and column of the first bad cell.
 */
export function readDescriptionSheet(text: string, fileNames: readonly string[]): DescriptionSheet {
  const rows = parseCsv(text);
  const header = rows[0];
  if (!header) throw refuse('the sheet has no header row', { row: 1 });
  if (rows.length - 1 > MAX_ROWS) {
    throw refuse(`the sheet has more than ${MAX_ROWS} rows`, { row: MAX_ROWS + 2 });
  }
  const names = header.map((h) => h.trim());
  const lower = names.map((n) => n.toLowerCase());
  const keyColumn = ['file', 'filename', 'file name']
    .map((k) => lower.indexOf(k))
    .find((i) => i >= 0);
  const idColumn = names.findIndex((n) => dublinCoreName(n) === 'identifier');
  const matchColumn = keyColumn ?? (idColumn >= 0 ? idColumn : undefined);
  if (matchColumn === undefined) {
    throw refuse('the sheet needs a file (or identifier) column to match its rows to files', {
      row: 1,
    });
  }
  const byName = new Map<string, string>();
  for (const name of fileNames) {
    byName.set(name, name);
    byName.set(name.replace(/\.[^.]+$/, ''), name);
  }
  const sheet: DescriptionSheet = new Map();
  rows.slice(1).forEach((cells, index) => {
    const row = index + 2;
    const at = (column: string, message: string) =>
      refuse(`row ${row}, column ${column}: ${message}`, { row, column });
    const key = (cells[matchColumn] ?? '').trim();
    const file = byName.get(key);
    if (!file) throw at(names[matchColumn]!, 'names no file of this upload');
    if (sheet.has(file)) throw at(names[matchColumn]!, 'describes a file an earlier row describes');
    const description: ItemDescription & { row: number } = { row, metadata: [] };
    names.forEach((column, i) => {
      if (i === keyColumn) return;
      const value = (cells[i] ?? '').trim();
      if (value === '') return;
      const dc = dublinCoreName(column);
      if (dc === 'title') {
        if (value.length > 500) throw at(column, 'a title is at most 500 characters');
        description.title = value;
        return;
      }
      if (dc === 'language') {
        if (!languageTag.safeParse(value).success) {
          throw at(column, 'not a language code such as en, de or frk');
        }
        description.language = value;
        return;
      }
      if (dc === 'date' && !isDublinCoreDate(value)) {
        throw at(column, 'not a date (YYYY, YYYY-MM or YYYY-MM-DD, or a range a/b)');
      }
      const label = dc ? labelOf(dc) : column;
      if (label === '' || label.length > METADATA_LIMITS.label) {
        throw at(column || `${i + 1}`, `a label is 1-${METADATA_LIMITS.label} characters`);
      }
      if (value.length > METADATA_LIMITS.value) {
        throw at(column, `a value is at most ${METADATA_LIMITS.value} characters`);
      }
      description.metadata.push({ label, value });
    });
    if (description.metadata.length > METADATA_LIMITS.entries) {
      throw refuse(`row ${row}: at most ${METADATA_LIMITS.entries} metadata entries`, { row });
    }
    sheet.set(file, description);
  });
  return sheet;
}
