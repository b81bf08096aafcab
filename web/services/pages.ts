import 'server-only';
import { actorName, actorOfLineAuthor, type EditChannel, lineAuthorOf } from '@quire/core/actor';
import {
  type LineAuthor,
  type LineState,
  lineStateOf,
  pageLanguage,
  type Segment,
  segmentsOf,
} from '@quire/core/annotation';
import { DomainError } from '@quire/core/errors';
import { mergeLines, stampEdit, stampVerified } from '@quire/core/lineStates';
import { actorNames } from '@quire/db/actors';
import { NotFoundError } from '@quire/db/errors';
import {
  getPage,
  getRevision,
  type PageRow,
  publishPage as publishPageRevision,
  savePageEdit,
} from '@quire/db/pages';
import { withTransaction } from '@quire/db/pool';
import type { Principal } from '@quire/db/workspaces';
import { pool } from '@quire/web/lib/server';
import { actorOf, requireAction } from './access';

/**
 * What happens when an editor saves, verifies or publishes a page, for the API and the console
 * alike. A save names the revision it was read from (If-Match). V4: the lines it changed land
 * on top of the current revision when nobody else changed those lines since; a line changed
 * on both sides is a conflict that returns the other text and its author, and nothing is
 * written. V1: a changed line becomes `edited`, a verified one `verified`, by the principal.
 */

export type PageEdit =
  /** The whole segment list (the API): boxes and spans may change, and must fit the page. */
  | { segments: Segment[]; language?: string }
  /**
   * New texts for lines of the revision read (the console): the segments and their targets
   * stay those of that revision, so such an edit can never move a line box.
   */
  | { texts: Array<{ index: number; text: string }> }
  /** V1: lines of the revision read that a person confirms as they are. */
  | { verify: number[] }
  /** V6: one speaker's label renamed on every line of the page that carries it. */
  | { renameSpeaker: { from: string; to: string } }
  /** V11: a speaker named for a line or a span of lines of the revision read. */
  | { assignSpeaker: { lines: number[]; speaker: string } }
  /** V2 undo: a line put back as it was in an earlier revision, its state with it. */
  | { restore: { index: number; revision: number } };

/** V4: a line both the save and a later revision changed, each its own way. */
export interface LineConflictView {
  index: number;
  mine: { text: string } | null;
  theirs: {
    text: string;
    state: LineState;
    by: LineAuthor | null;
    /** R7: `by` as people read it (an account's name, a key's label). */
    byName: string | null;
    at: string | null;
  } | null;
}

export type EditPageResult =
  | { state: 'committed'; revision: number; page: PageRow; merged: boolean }
  /** The page is past the revision the edit was made from, and that one is not kept. */
  | { state: 'conflict'; revision: number; current: PageRow | undefined }
  /** V4: lines changed since by someone else, and by this edit too. */
  | { state: 'lineConflict'; revision: number; current: PageRow; conflicts: LineConflictView[] };

const pageNotFound = () => new NotFoundError('page_not_found', 'page not found');

// A save that lost the race to the page's lock is merged again on what won it, this often.
const MERGE_ROUNDS = 3;

export async function editPage(
  principal: Principal,
  input: { pageId: number; expectedRevision: number; edit: PageEdit; channel: EditChannel },
): Promise<EditPageResult> {
  requireAction(principal, 'page.edit');
  // V1 R5: the person (account) or the key that set the lines' state.
  const author = lineAuthorOf(principal.actor);
  for (let round = 0; ; round++) {
    const page = await getPage(pool(), principal.workspaceId, input.pageId);
    if (!page) throw pageNotFound();
    const current = segmentsOf(page.annotationPage);
    // The revision the save was made from: the current one, or an older one still kept.
    let base: Segment[];
    if (input.expectedRevision === page.revision) base = current;
    else if (input.expectedRevision > page.revision) {
      return { state: 'conflict', revision: page.revision, current: page };
    } else {
      const kept = await getRevision(
        pool(),
        principal.workspaceId,
        page.id,
        input.expectedRevision,
      );
      if (!kept) return { state: 'conflict', revision: page.revision, current: page };
      base = segmentsOf(kept.annotationPage);
    }
    const at = new Date().toISOString();
    const { mine, language } =
      'restore' in input.edit
        ? {
            mine: await restoredLines(principal, page, base, input.edit.restore),
            language: undefined,
          }
        : savedLines(page, base, input.edit, author, at);
    const merge = mergeLines(base, current, mine);
    if (merge.state === 'lineConflict') {
      const stamps = merge.conflicts.flatMap((c) => (c.theirs?.stamp ? [c.theirs.stamp.by] : []));
      const names = await actorNames(pool(), stamps.map(actorOfLineAuthor));
      return {
        state: 'lineConflict',
        revision: page.revision,
        current: page,
        conflicts: merge.conflicts.map((c) => ({
          index: c.index,
          mine: c.mine ? { text: c.mine.text } : null,
          theirs: c.theirs
            ? {
                text: c.theirs.text,
                state: lineStateOf(c.theirs),
                by: c.theirs.stamp?.by ?? null,
                byName: c.theirs.stamp
                  ? actorName(actorOfLineAuthor(c.theirs.stamp.by), names)
                  : null,
                at: c.theirs.stamp?.at ?? null,
              }
            : null,
        })),
      };
    }
    const result = await withTransaction(pool(), (client) =>
      savePageEdit(client, {
        workspaceId: principal.workspaceId,
        pageId: page.id,
        expectedRevision: page.revision,
        segments: merge.segments,
        language: language ?? pageLanguage(page.annotationPage),
        author: principal.actor,
        channel: input.channel,
        // V11: naming speakers is its own kind of revision, never an edit of the text.
        ...('renameSpeaker' in input.edit || 'assignSpeaker' in input.edit
          ? { change: 'speakers' as const }
          : {}),
      }),
    );
    if (result.state === 'conflict') {
      if (round + 1 < MERGE_ROUNDS) continue;
      const now = await getPage(pool(), principal.workspaceId, page.id);
      return { state: 'conflict', revision: result.currentRevision, current: now };
    }
    const saved = await getPage(pool(), principal.workspaceId, page.id);
    if (!saved) throw pageNotFound();
    return {
      state: 'committed',
      revision: result.revision,
      page: saved,
      merged: page.revision !== input.expectedRevision,
    };
  }
}

/** V2 undo: the revision read with one line as an earlier revision had it. */
async function restoredLines(
  principal: Principal,
  page: PageRow,
  base: Segment[],
  restore: { index: number; revision: number },
): Promise<Segment[]> {
  const earlier = await getRevision(pool(), principal.workspaceId, page.id, restore.revision);
  const line = earlier && segmentsOf(earlier.annotationPage).find((s) => s.index === restore.index);
  if (!line || !base.some((s) => s.index === restore.index)) {
    throw new DomainError(
      'unknown_line',
      `line ${restore.index} is not in revision ${restore.revision}`,
    );
  }
  return base.map((s) => (s.index === restore.index ? line : s));
}

/** The page as the save wants it, made from the revision it was read from. */
function savedLines(
  page: PageRow,
  base: Segment[],
  edit: Exclude<PageEdit, { restore: unknown }>,
  author: LineAuthor,
  at: string,
): { mine: Segment[]; language?: string } {
  if ('segments' in edit) {
    checkSegmentsFit(page, edit.segments);
    return { mine: stampEdit(base, edit.segments, author, at), language: edit.language };
  }
  const known = new Set(base.map((s) => s.index));
  const indexes =
    'texts' in edit
      ? edit.texts.map((e) => e.index)
      : 'verify' in edit
        ? edit.verify
        : 'assignSpeaker' in edit
          ? edit.assignSpeaker.lines
          : [];
  const unknown = indexes.find((i) => !known.has(i));
  if (unknown !== undefined) {
    throw new DomainError('unknown_line', `line ${unknown} is not a line of the revision read`, {
      index: unknown,
    });
  }
  if ('verify' in edit) return { mine: stampVerified(base, edit.verify, author, at) };
  if ('renameSpeaker' in edit) {
    const { from, to } = edit.renameSpeaker;
    if (!base.some((s) => s.speaker === from)) {
      throw new DomainError('unknown_speaker', `no line of the page has speaker ${from}`);
    }
    const renamed = base.map((s) => (s.speaker === from ? { ...s, speaker: to } : s));
    return { mine: stampEdit(base, renamed, author, at) };
  }
  if ('assignSpeaker' in edit) {
    const { lines, speaker } = edit.assignSpeaker;
    const chosen = new Set(lines);
    const assigned = base.map((s) => (chosen.has(s.index) ? { ...s, speaker } : s));
    return { mine: stampEdit(base, assigned, author, at) };
  }
  const texts = new Map(edit.texts.map((e) => [e.index, e.text.replace(/\r?\n/g, ' ')]));
  const next = base.map((s) => (texts.has(s.index) ? { ...s, text: texts.get(s.index)! } : s));
  return { mine: stampEdit(base, next, author, at) };
}

/** Segments that do not fit the page: wrong target kind, repeated index, reversed span. */
function checkSegmentsFit(page: PageRow, segments: Segment[]): void {
  const seen = new Set<number>();
  for (const segment of segments) {
    if (seen.has(segment.index)) {
      throw new DomainError(
        'duplicate_segment_index',
        `segment index ${segment.index} appears twice`,
      );
    }
    seen.add(segment.index);
    const expected = page.kind === 'image' ? 'xywh' : 't';
    if (segment.target.kind !== expected) {
      throw new DomainError(
        'segment_kind_mismatch',
        `segments of ${page.kind} pages target #${expected}=`,
      );
    }
    if (segment.target.kind === 't' && segment.target.end < segment.target.start) {
      throw new DomainError(
        'invalid_segment_span',
        `segment ${segment.index} ends before it starts`,
      );
    }
  }
}

/**
 * E3: publish the revision the editor is looking at; a page now at another revision is not
 * published blind (`mismatch`), and the revision already public changes nothing.
 */
export async function publishPage(
  principal: Principal,
  input: { pageId: number; expectedRevision: number },
) {
  requireAction(principal, 'page.publish');
  const result = await publishPageRevision(pool(), {
    actor: actorOf(principal),
    workspaceId: principal.workspaceId,
    pageId: input.pageId,
    expectedRevision: input.expectedRevision,
  });
  if (result.state === 'missing') throw pageNotFound();
  return result;
}
