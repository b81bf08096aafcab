'use server';
import { segmentsOf } from '@quire/core/annotation';
import type { PageRow } from '@quire/db/pages';
import { refusalOf } from '@quire/web/lib/errors';
import { requireAct } from '@quire/web/lib/session';
import {
  type EditPageResult,
  editPage,
  type LineConflictView,
  type PageEdit,
  publishPage,
} from '@quire/web/services/pages';
import { refresh } from 'next/cache';

const MAX_LINE_CHARS = 10_000;
const MAX_SPAN_LINES = 10_000;

export type SaveResult =
  | { state: 'committed'; revision: number; merged: boolean }
  | { state: 'conflict'; revision: number; current: Array<{ index: number; text: string }> }
  /** V4: lines changed by someone else since, and by this save too; nothing was written. */
  | {
      state: 'lineConflict';
      revision: number;
      current: Array<{ index: number; text: string }>;
      conflicts: LineConflictView[];
    }
  | { state: 'error'; message: string };

const lineTexts = (page: PageRow | undefined) =>
  page ? segmentsOf(page.annotationPage).map((s) => ({ index: s.index, text: s.text })) : [];

/**
 * The console's save (web/services/pages.ts `editPage`): only texts travel from the browser,
 * from the revision the editor read (the console's If-Match). V4: lines nobody else changed
 * since land on top of the current revision; a line changed on both sides changes nothing
 * and comes back with the other text and its author, so the editor can choose.
 */
export async function savePageAction(input: {
  pageId: number;
  expectedRevision: number;
  edits: Array<{ index: number; text: string }>;
  /** False when the caller keeps its own view of the lines (the review queue). */
  refresh?: boolean;
}): Promise<SaveResult> {
  if (
    !Array.isArray(input.edits) ||
    input.edits.some(
      (e) =>
        !Number.isSafeInteger(e.index) ||
        typeof e.text !== 'string' ||
        e.text.length > MAX_LINE_CHARS,
    )
  ) {
    return { state: 'error', message: `A line may hold at most ${MAX_LINE_CHARS} characters.` };
  }
  return consoleEdit(input, { texts: input.edits });
}

/** V1: the lines named are verified, as they are in the revision the reviewer read. */
export async function verifyLinesAction(input: {
  pageId: number;
  expectedRevision: number;
  lines: number[];
  /** False when the caller keeps its own view of the lines (the review queue). */
  refresh?: boolean;
}): Promise<SaveResult> {
  if (!Array.isArray(input.lines) || !input.lines.every((i) => Number.isSafeInteger(i) && i >= 0)) {
    return { state: 'error', message: 'The request was malformed.' };
  }
  return consoleEdit(input, { verify: input.lines });
}

/** V2 undo: one line put back as it was in an earlier revision. */
export async function restoreLineAction(input: {
  pageId: number;
  expectedRevision: number;
  index: number;
  revision: number;
  /** False when the caller keeps its own view of the lines (the review queue). */
  refresh?: boolean;
}): Promise<SaveResult> {
  if (!Number.isSafeInteger(input.index) || !Number.isSafeInteger(input.revision)) {
    return { state: 'error', message: 'The request was malformed.' };
  }
  return consoleEdit(input, { restore: { index: input.index, revision: input.revision } });
}

/** V6: a speaker named once for every line of the page that carries the label. */
export async function renameSpeakerAction(input: {
  pageId: number;
  expectedRevision: number;
  from: string;
  to: string;
}): Promise<SaveResult> {
  const to = typeof input.to === 'string' ? input.to.trim() : '';
  if (typeof input.from !== 'string' || to.length === 0 || to.length > 200) {
    return { state: 'error', message: 'A speaker name has 1 to 200 characters.' };
  }
  return consoleEdit(input, { renameSpeaker: { from: input.from, to } });
}

/**
 * V11: a speaker named for one line or a span of lines (from one line to another, both
 * included), on a recording whether or not its engine gave labels; the lines keep their state.
 */
export async function assignSpeakerAction(input: {
  pageId: number;
  expectedRevision: number;
  from: number;
  to: number;
  speaker: string;
}): Promise<SaveResult> {
  const speaker = typeof input.speaker === 'string' ? input.speaker.trim() : '';
  if (speaker.length === 0 || speaker.length > 200) {
    return { state: 'error', message: 'A speaker name has 1 to 200 characters.' };
  }
  const { from, to } = input;
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0 || to < from) {
    return { state: 'error', message: 'A span of lines runs from one line to a later one.' };
  }
  if (to - from >= MAX_SPAN_LINES) {
    return { state: 'error', message: `A span holds at most ${MAX_SPAN_LINES} lines.` };
  }
  const lines = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  return consoleEdit(input, { assignSpeaker: { lines, speaker } });
}

async function consoleEdit(
  input: { pageId: number; expectedRevision: number; refresh?: boolean },
  edit: PageEdit,
): Promise<SaveResult> {
  const principal = await requireAct('page.edit');
  if (!Number.isSafeInteger(input.pageId) || !Number.isSafeInteger(input.expectedRevision)) {
    return { state: 'error', message: 'The edit was malformed.' };
  }
  let result: EditPageResult;
  try {
    result = await editPage(principal, {
      pageId: input.pageId,
      expectedRevision: input.expectedRevision,
      edit,
      channel: 'console',
    });
  } catch (error) {
    // R6: text the database cannot hold or index is refused with the reason, nothing saved.
    return { state: 'error', message: refusalOf(error).message };
  }
  if (result.state === 'conflict') {
    return { state: 'conflict', revision: result.revision, current: lineTexts(result.current) };
  }
  if (result.state === 'lineConflict') {
    return {
      state: 'lineConflict',
      revision: result.revision,
      current: lineTexts(result.current),
      conflicts: result.conflicts,
    };
  }
  // The page view re-renders with the new revision; the review queue holds its own lines and
  // refreshes the rest of its view when the reviewer pauses, so a save there answers at once.
  if (input.refresh !== false) refresh();
  return { state: 'committed', revision: result.revision, merged: result.merged };
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
  const principal = await requireAct('page.publish');
  const pageId = Number(form.get('pageId'));
  const expectedRevision = Number(form.get('expectedRevision'));
  if (!Number.isSafeInteger(pageId) || !Number.isSafeInteger(expectedRevision)) {
    return { error: 'The request was malformed.', done: null };
  }
  let result: Awaited<ReturnType<typeof publishPage>>;
  try {
    result = await publishPage(principal, { pageId, expectedRevision });
  } catch (error) {
    const refused = refusalOf(error);
    refresh();
    return { error: refused.message, done: null };
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
