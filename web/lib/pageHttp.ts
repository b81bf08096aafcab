import 'server-only';
import { actorOfLineAuthor } from '@quire/core/actor';
import { pageLanguage, segmentsOf } from '@quire/core/annotation';
import { type ExportFormat, exportPage } from '@quire/core/exports';
import { type ExportProvenance, provenanceOf } from '@quire/core/interchange/provenance';
import { actorNames } from '@quire/db/actors';
import { listRevisions, type PageRow } from '@quire/db/pages';
import type { Queryable } from '@quire/db/pool';
import type { EditPageResult } from '@quire/web/services/pages';
import { ApiError, errorBody, statusOfCode } from './errors';

/**
 * A page over HTTP: its ETag, the If-Match an edit names, its JSON and its export responses.
 * What may be done to a page (edit, publish) is web/services/pages.ts; its SQL db/pages.ts.
 */

/** ETag of a page: its revision, quoted (SPEC §7). */
export function pageEtag(revision: number): string {
  return `"${revision}"`;
}

/**
 * The revision an If-Match names: `"3"`, `W/"3"` or a bare `3`. Missing is a 428: an edit
 * must say which revision it was made from; `*` or a list does not name one.
 */
export function ifMatchRevision(header: string | null): number {
  if (header === null || header.trim() === '') {
    throw new ApiError(
      'precondition_required',
      'If-Match with the revision you edited is required',
    );
  }
  const match = /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(header);
  if (!match) {
    throw new ApiError('invalid_if_match', 'If-Match must name one revision, e.g. "3"');
  }
  return Number(match[1]);
}

export function pageJson(page: PageRow) {
  return {
    pageId: page.id,
    itemId: page.itemId,
    kind: page.kind,
    canvasUri: page.canvasUri,
    revision: page.revision,
    publishedRevision: page.publishedRevision,
    annotationPage: page.annotationPage,
  };
}

/**
 * The answer to a save or a verify (V1 V4): 200 with the page and its new ETag; 409
 * `line_conflict` with each line changed on both sides (the saver's text, the current text,
 * its state, author and time); 412 `stale_revision` when the revision named is not kept.
 */
export function pageEditResponse(result: EditPageResult, expectedRevision: number): Response {
  const headers = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' };
  if (result.state === 'committed') {
    return new Response(JSON.stringify({ ...pageJson(result.page), merged: result.merged }), {
      headers: { ...headers, ETag: pageEtag(result.revision) },
    });
  }
  const code = result.state === 'lineConflict' ? 'line_conflict' : 'stale_revision';
  const body =
    result.state === 'lineConflict'
      ? errorBody(
          code,
          `${result.conflicts.length} line(s) changed since revision ${expectedRevision} were changed by this save too`,
          { currentRevision: result.revision, conflicts: result.conflicts },
        )
      : errorBody(code, `the page is at revision ${result.revision}, not ${expectedRevision}`, {
          currentRevision: result.revision,
        });
  return new Response(JSON.stringify(body), {
    status: statusOfCode(code),
    headers: { ...headers, ETag: pageEtag(result.revision) },
  });
}

/** Revisions kept for a page's provenance; a page edited more often names its latest edits. */
const PROVENANCE_REVISIONS = 200;

/** I8: the steps that made the page's current revision, for ALTO and PAGE exports. */
export async function pageProvenance(db: Queryable, page: PageRow): Promise<ExportProvenance> {
  const revisions =
    (await listRevisions(db, page.workspaceId, page.id, {
      beforeRevision: page.revision + 1,
      limit: PROVENANCE_REVISIONS,
    })) ?? [];
  const stamps = segmentsOf(page.annotationPage).flatMap((s) =>
    s.stamp ? [actorOfLineAuthor(s.stamp.by)] : [],
  );
  return { ...provenanceOf(revisions, page.revision), names: await actorNames(db, stamps) };
}

const IIIF_MEDIA_TYPE =
  'application/ld+json;profile="http://iiif.io/api/presentation/3/context.json"';

/**
 * The current revision of a page in one export format, as a download, for both the API and
 * the console. Throws `UnsupportedExportError` when the format does not fit the page kind.
 */
export function pageExportResponse(
  page: PageRow,
  format: 'iiif' | ExportFormat,
  provenance?: ExportProvenance,
): Response {
  const headers = { ETag: pageEtag(page.revision), 'Cache-Control': 'no-store' };
  const filename = `page-${page.id}-r${page.revision}`;
  if (format === 'iiif') {
    return new Response(JSON.stringify(page.annotationPage), {
      headers: {
        ...headers,
        'Content-Type': IIIF_MEDIA_TYPE,
        'Content-Disposition': `attachment; filename="${filename}.json"`,
      },
    });
  }
  const result = exportPage(format, {
    canvasUri: page.canvasUri,
    kind: page.kind,
    segments: segmentsOf(page.annotationPage),
    width: page.width ?? undefined,
    height: page.height ?? undefined,
    duration: page.durationMs === null ? undefined : page.durationMs / 1000,
    language: pageLanguage(page.annotationPage),
    ...(provenance ? { provenance } : {}),
  });
  return new Response(result.body, {
    headers: {
      ...headers,
      'Content-Type': result.mediaType,
      'Content-Disposition': `attachment; filename="${filename}.${result.extension}"`,
    },
  });
}
