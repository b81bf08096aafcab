import type { ErrorCode } from '@quire/core/errors';
import { metadataEntries } from './archiveSchemas';

/**
 * F1/F2: what the console's archive forms read, and what they say when done. A refusal comes
 * back as its code (`?error=`), said in the registry's sentence (core/errorCodes.ts).
 */

/** Label/value rows of a form, blank rows dropped, checked as the API checks them. */
export function metadataOf(form: FormData) {
  const labels = form.getAll('metaLabel').map((v) => String(v).trim());
  const values = form.getAll('metaValue').map((v) => String(v).trim());
  const rows = labels
    .map((label, i) => ({ label, value: values[i] ?? '' }))
    .filter((r) => r.label !== '' || r.value !== '');
  return metadataEntries.safeParse(rows);
}

/** The page a form goes back to, with the code of its refusal (said by FormNotice). */
export const refusedHref = (back: string, code: ErrorCode) => `${back}?error=${code}`;

export const ARCHIVE_DONE: Record<string, string> = {
  saved: 'Saved.',
  moved: 'Moved.',
  reordered: 'Page order saved.',
  deleted: 'Collection deleted.',
  imported: 'Imported from the IIIF manifest.',
};

export function queryValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
