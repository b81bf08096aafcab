'use server';
import { segmentsOf } from '@quire/core/annotation';
import { getPage, publishPage, savePageEdit } from '@quire/db/pages';
import { withTransaction } from '@quire/db/pool';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import { refresh } from 'next/cache';

const MAX_LINE_CHARS = 10_000;

export type SaveResult =
  | { state: 'saved'; revision: number }
  | { state: 'stale'; revision: number; current: Array<{ index: number; text: string }> }
  | { state: 'error'; message: string };

/**
 * A human edit by compare-and-set on the revision the editor read (the console's If-Match).
 * Only texts travel from the browser: the segments and their targets are those of the
 * revision named, so an edit can never move a line box. A page that moved on changes
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
  const page = await getPage(pool(), principal.workspaceId, input.pageId);
  if (!page) return { state: 'error', message: 'That page does not exist.' };
  const currentTexts = () =>
    segmentsOf(page.annotationPage).map((s) => ({ index: s.index, text: s.text }));
  if (page.revision !== input.expectedRevision) {
    return { state: 'stale', revision: page.revision, current: currentTexts() };
  }
  const texts = new Map(input.edits.map((e) => [e.index, e.text.replace(/\r?\n/g, ' ')]));
  const segments = segmentsOf(page.annotationPage).map((s) =>
    texts.has(s.index) ? { ...s, text: texts.get(s.index)! } : s,
  );
  const language = page.annotationPage.items.find((a) => a.body.language)?.body.language;
  const result = await withTransaction(pool(), (client) =>
    savePageEdit(client, {
      workspaceId: principal.workspaceId,
      pageId: page.id,
      expectedRevision: input.expectedRevision,
      segments,
      language,
      editedBy: `console:api-key:${principal.apiKeyId}`,
    }),
  );
  if (result.state === 'missing') return { state: 'error', message: 'That page does not exist.' };
  if (result.state === 'stale') {
    // Moved on between our read and the locked compare-and-set: read it again.
    const fresh = await getPage(pool(), principal.workspaceId, page.id);
    return {
      state: 'stale',
      revision: result.revision,
      current: fresh
        ? segmentsOf(fresh.annotationPage).map((s) => ({ index: s.index, text: s.text }))
        : [],
    };
  }
  refresh();
  return { state: 'saved', revision: result.revision };
}

export interface PublishState {
  error: string | null;
  done: string | null;
}

/** E3: publish the revision the editor is looking at; a newer one is not published blind. */
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
  const result = await publishPage(pool(), {
    workspaceId: principal.workspaceId,
    pageId,
    expectedRevision,
  });
  refresh();
  switch (result.state) {
    case 'missing':
      return { error: 'That page does not exist.', done: null };
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
