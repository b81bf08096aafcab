import { metadataEntries } from './archiveSchemas';

/** F1/F2: what the console's archive forms read, and what their refusals say. */

/** Label/value rows of a form, blank rows dropped, checked as the API checks them. */
export function metadataOf(form: FormData) {
  const labels = form.getAll('metaLabel').map((v) => String(v).trim());
  const values = form.getAll('metaValue').map((v) => String(v).trim());
  const rows = labels
    .map((label, i) => ({ label, value: values[i] ?? '' }))
    .filter((r) => r.label !== '' || r.value !== '');
  return metadataEntries.safeParse(rows);
}

/** The message for a refusal's code (`?error=`); unknown codes get a general one. */
export const ARCHIVE_ERRORS: Record<string, string> = {
  invalid_collection:
    'A collection needs a title (at most 500 characters), and every metadata row a label and a value.',
  invalid_item:
    'Every metadata row needs a label and a value; a language is a tag such as en or de-DE.',
  invalid_order: 'That page order could not be read; reload the page and try again.',
  invalid_target: 'Name another item to move the page to.',
  collection_cycle: 'A collection cannot move under itself or one of its own sub-collections.',
  collection_not_empty:
    'Only an empty collection can be deleted: move or delete its items and sub-collections first.',
  collection_not_found: 'That collection no longer exists.',
  parent_not_found: 'That collection no longer exists.',
  item_not_found: 'That item does not exist.',
  item_deleted: 'That item was deleted; choose another.',
  pages_changed: 'The pages changed meanwhile; here they are as they stand now.',
  pages_missing: 'Every page of the item must stay in its order.',
  page_not_found: 'That page no longer exists.',
};

export const ARCHIVE_DONE: Record<string, string> = {
  saved: 'Saved.',
  moved: 'Moved.',
  reordered: 'Page order saved.',
  deleted: 'Collection deleted.',
};

export function queryValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
