'use server';
import { segmentsOf } from '@quire/core/annotation';
import { InvalidTextError, PageTextTooLargeError } from '@quire/core/text';
import { NotFoundError } from '@quire/db/errors';
import type { PageRow } from '@quire/db/pages';
import { requirePrincipal } from '@quire/web/lib/session';
import { editPage, publishPage } from '@quire/web/services/pages';
import { refresh } from 'next/cache';

const MAX_LINE_CHARS = 10_000;

export type SaveResult =
  | { state: 'saved'; revision: number }
  | { state: 'stale'; revision: number; current: Array<{ index: number; text: string }> }
  | { state: 'error'; message: string };

const lineTexts = (page: PageRow | undefined) =>
  page ? segmentsOf(page.annotationPage).map((s) => ({ index: s.index, text: s.text })) : [];

/**
 * The console's save (web/services/pages.ts `editPage`): only texts travel from the browser,
 * on the revision the editor read (the console's If-Match). A page that moved on changes
 * nothing and returns the current texts, so the editor can show both and lose neither.
 */
export async function savePageAction(input: {
  pageId: number;
  expectedRevision: number;
  edits: Array<{ index: number; text: string }>;
}): Promise<SaveResult> {
  const principal = await requirePrincipal();
  if (!Number.isSafeInteger(input.pageId) || !Number.isSafeInteger(input.expectedRevision)) {
    return { state: 'error', message: 'The edit was malformed.' };
  }
  if (
    !Array.isArray(input.edits) ||
    input.edits.some((e) => typeof e.text !== 'string' || e.text.length > MAX_LINE_CHARS)
  ) {
    return { state: 'error', message: `A line may hold at most ${MAX_LINE_CHARS} characters.` };
  }
  let result: Awaited<ReturnType<typeof editPage>>;
  try {
    result = await editPage(principal, {
      pageId: input.pageId,
      expectedRevision: input.expectedRevision,
      edit: { texts: input.edits },
      channel: 'console',
    });
  } catch (error) {
    if (error instanceof NotFoundError)
      return { state: 'error', message: 'That page does not exist.' };
    // R6: text the database cannot hold or index is refused with the reason, nothing saved.
    if (error instanceof InvalidTextError || error instanceof PageTextTooLargeError) {
      return { state: 'error', message: error.message };
    }
    throw error;
  }
  if (result.state === 'stale') {
    return { state: 'stale', revision: result.revision, current: lineTexts(result.current) };
  }
  refresh();
  return { state: 'saved', revision: result.revision };
}

export interface PublishState {
  error: string | null;
  done: string | null;
}

/** E3: publish the revision the editor is looking at (web/services/pages.ts `publishPage`). */
export async function publishPageAction(
  _previous: PublishState,
  form: FormData,
): Promise<PublishState> {
  const principal = await requirePrincipal();
  const pageId = Number(form.get('pageId'));
  const expectedRevision = Number(form.get('expectedRevision'));
  if (!Number.isSafeInteger(pageId) || !Number.isSafeInteger(expectedRevision)) {
    return { error: 'The request was malformed.', done: null };
  }
  let result: Awaited<ReturnType<typeof publishPage>>;
  try {
    result = await publishPage(principal, { pageId, expectedRevision });
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    refresh();
    return { error: 'That page does not exist.', done: null };
  }
  refresh();
  switch (result.state) {
    case 'mismatch':
      return {
        error: `The page is now at revision ${result.revision}; review it before publishing.`,
        done: null,
      };
    case 'unchanged':
      return { error: null, done: `Revision ${result.revision} is already published.` };
    case 'published':
      return { error: null, done: `Revision ${result.revision} published.` };
  }
}
