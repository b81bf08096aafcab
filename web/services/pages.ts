import 'server-only';
import { type Segment, segmentsOf } from '@quire/core/annotation';
import { DomainError } from '@quire/core/errors';
import { actorRef } from '@quire/core/roles';
import { NotFoundError } from '@quire/db/errors';
import {
  getPage,
  type PageRow,
  publishPage as publishPageRevision,
  savePageEdit,
} from '@quire/db/pages';
import { withTransaction } from '@quire/db/pool';
import type { Principal } from '@quire/db/workspaces';
import { pageLanguage } from '@quire/web/lib/pageHttp';
import { pool } from '@quire/web/lib/server';
import { actorOf, requireAction } from './access';

/**
 * What happens when an editor saves or publishes a page, for the API and the console alike.
 * An edit is a compare-and-set on the revision the editor read: a page that moved on since
 * changes nothing, and the answer carries the current page so the editor can show both.
 */

/** Where an edit came from; it is recorded as the revision's author beside the key. */
export type EditChannel = 'api' | 'console';

export type PageEdit =
  /** The whole segment list (the API): boxes and spans may change, and must fit the page. */
  | { segments: Segment[]; language?: string }
  /**
   * New texts for lines of the revision read (the console): the segments and their targets
   * stay those of that revision, so such an edit can never move a line box.
   */
  | { texts: Array<{ index: number; text: string }> };

export type EditPageResult =
  | { state: 'saved'; revision: number; page: PageRow }
  | { state: 'stale'; revision: number; current: PageRow | undefined };

const pageNotFound = () => new NotFoundError('page_not_found', 'page not found');

export async function editPage(
  principal: Principal,
  input: { pageId: number; expectedRevision: number; edit: PageEdit; channel: EditChannel },
): Promise<EditPageResult> {
  requireAction(principal, 'page.edit');
  const page = await getPage(pool(), principal.workspaceId, input.pageId);
  if (!page) throw pageNotFound();
  let segments: Segment[];
  let language: string | undefined;
  if ('segments' in input.edit) {
    checkSegmentsFit(page, input.edit.segments);
    segments = input.edit.segments;
    language = input.edit.language;
  } else {
    // Texts name lines of the revision read; on another revision they would land elsewhere.
    if (page.revision !== input.expectedRevision) {
      return { state: 'stale', revision: page.revision, current: page };
    }
    const texts = new Map(input.edit.texts.map((e) => [e.index, e.text.replace(/\r?\n/g, ' ')]));
    segments = segmentsOf(page.annotationPage).map((s) =>
      texts.has(s.index) ? { ...s, text: texts.get(s.index)! } : s,
    );
    language = pageLanguage(page.annotationPage);
  }
  const result = await withTransaction(pool(), (client) =>
    savePageEdit(client, {
      workspaceId: principal.workspaceId,
      pageId: page.id,
      expectedRevision: input.expectedRevision,
      segments,
      language,
      // R5: the account or key that made the revision (`account:7`, `api-key:3`).
      editedBy: `${input.channel === 'console' ? 'console:' : ''}${actorRef(principal.actor)}`,
    }),
  );
  if (result.state === 'missing') throw pageNotFound();
  // Read again: the page moved on between our read and the locked compare-and-set, or it is
  // the revision just written.
  const current = await getPage(pool(), principal.workspaceId, page.id);
  if (result.state === 'stale') return { state: 'stale', revision: result.revision, current };
  if (!current) throw pageNotFound();
  return { state: 'saved', revision: result.revision, page: current };
}

/** Segments that do not fit the page: wrong target kind, repeated index, reversed span. */
function checkSegmentsFit(page: PageRow, segments: Segment[]): void {
  const seen = new Set<number>();
  for (const segment of segments) {
    if (seen.has(segment.index)) {
      throw new DomainError(
        'invalid',
        'duplicate_segment_index',
        `segment index ${segment.index} appears twice`,
      );
    }
    seen.add(segment.index);
    const expected = page.kind === 'image' ? 'xywh' : 't';
    if (segment.target.kind !== expected) {
      throw new DomainError(
        'invalid',
        'segment_kind_mismatch',
        `segments of ${page.kind} pages target #${expected}=`,
      );
    }
    if (segment.target.kind === 't' && segment.target.end < segment.target.start) {
      throw new DomainError(
        'invalid',
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
