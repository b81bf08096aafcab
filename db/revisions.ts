import type { EditChannel, WorkspaceActor } from '../core/actor';
import { buildAnnotationPage, lineStateOf, type Segment, targetFragment } from '../core/annotation';
import { EVENT_TYPES } from '../core/cloudevents';
import { countLineStates } from '../core/lineStates';
import type { EngineIdentity } from '../core/provider';
import { assertLinesAccepted, assertPageTextFits, searchTextOf } from '../core/text';
import { appendEvent } from './events';
import type { PoolClient } from './pool';

/**
 * The one writer of a page revision. The engine commit (J1), a human edit (If-Match), an
 * imported transcript (I3) and a new page's revision 0 all move a page the same way: a
 * compare-and-set from the revision the writer read to the next one, which stores the
 * AnnotationPage, the derived search text and the `page_revisions` row with its provenance.
 * A page that moved on since is one outcome, `RevisionConflict`, and each writer decides
 * what it means: the engine fails its job `conflict`, an editor is told `stale`, an import
 * cannot go on.
 */

/** I3: where an imported revision came from. */
export interface ImportProvenance {
  /** I3 PAGE, ALTO; I6 hOCR; I5 a PDF's text layer; F8 a IIIF manifest's text annotations. */
  format: 'page' | 'alto' | 'hocr' | 'pdf' | 'iiif';
  /** The file's schema namespace (PAGE release, ALTO version). */
  namespace: string;
  /** The software or creator the file names; null when it names none. */
  producer: string | null;
  /** SHA-256 (hex) of the uploaded transcript file. */
  sha256: string;
  filename: string | null;
  /** I5: the page of the PDF whose text layer this is. */
  page?: number;
  /** F8: the URL (without query) the transcription was fetched from. */
  url?: string;
}

/** Who wrote a revision, as its `page_revisions` row records it. */
export type RevisionProvenance =
  | { source: 'initial' }
  | {
      source: 'engine';
      engine: EngineIdentity;
      jobId: string;
      attemptNumber: number;
      /** V8: the lines are what the image's lines say (no text moved between them). */
      lineText?: 'diplomatic';
    }
  /**
   * R5: the account or API key that edited, and where (the API or the console); V11: a
   * revision that only named speakers says so (`change: 'speakers'`).
   */
  | { source: 'human'; author: WorkspaceActor; channel: EditChannel; change?: 'speakers' }
  | { source: 'import'; import: ImportProvenance };

export interface RevisionWrite {
  pageId: number;
  /** The page's canvas URI when the writer has it at hand (a page it just created). */
  canvasUri?: string;
  /** The revision the writer read; `null` for a page just created, whose revision is 0. */
  expectedRevision: number | null;
  segments: readonly Segment[];
  language?: string;
  provenance: RevisionProvenance;
}

export interface RevisionCommitted {
  state: 'committed';
  revision: number;
}

/** The page is no longer at the revision the writer read; nothing was written. */
export interface RevisionConflict {
  state: 'conflict';
  currentRevision: number;
}

/**
 * How a revision write ends, whoever the writer: the revision written, or the page not at the
 * revision the writer read. A stale attempt fence is not an outcome: it is thrown
 * (`StaleAttemptError`, STALE_ATTEMPT).
 */
export type RevisionWriteOutcome = RevisionCommitted | RevisionConflict;

/**
 * Writes the next revision of a page in the caller's transaction, or reports the miss. The
 * compare-and-set takes the page's row lock when the caller does not hold it already, so a
 * caller that locks other rows first keeps its own lock order.
 */
export async function commitRevision(
  client: PoolClient,
  write: RevisionWrite,
): Promise<RevisionWriteOutcome> {
  // The canvas URI never changes, so it may be read before the compare-and-set.
  const canvasUri =
    write.canvasUri ??
    (
      await client.query<{ canvas_uri: string }>('SELECT canvas_uri FROM pages WHERE id = $1', [
        write.pageId,
      ])
    ).rows[0]?.canvas_uri;
  if (canvasUri === undefined) throw new Error(`page ${write.pageId} not found`);
  // R6: what a person or a file brings must fit the search index and hold storable text; an
  // engine's reading is never refused (its search text is bounded instead, searchTextOf).
  if (write.provenance.source === 'human' || write.provenance.source === 'import') {
    assertLinesAccepted(write.segments);
    assertPageTextFits(write.segments);
  }
  const from = write.expectedRevision ?? 0;
  const revision = write.expectedRevision === null ? 0 : from + 1;
  // V1: the writer stamps the lines a person changed (core/lineStates.ts); an unstamped line
  // is `machine`, and who wrote it and when is its revision's provenance.
  const segments = write.segments;
  const annotationPage = JSON.stringify(
    buildAnnotationPage(canvasUri, revision, segments, write.language),
  );
  // The new revision's row must not exist yet: so revision 0, too, is written only once.
  const cas = await client.query(
    `UPDATE pages SET revision = $3, annotation_page = $4, search_text = $5, updated_at = now()
      WHERE id = $1 AND revision = $2
        AND NOT EXISTS (SELECT 1 FROM page_revisions WHERE page_id = $1 AND revision = $3)`,
    [write.pageId, from, revision, annotationPage, searchTextOf(segments)],
  );
  if (cas.rowCount !== 1) {
    const now = await client.query<{ revision: number }>(
      'SELECT revision FROM pages WHERE id = $1',
      [write.pageId],
    );
    return { state: 'conflict', currentRevision: now.rows[0]!.revision };
  }
  const p = write.provenance;
  await client.query(
    `INSERT INTO page_revisions (page_id, revision, annotation_page, source, engine, model, model_version, job_id,
       attempt_number, author_kind, author_id, edit_channel, provenance)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
    [
      write.pageId,
      revision,
      annotationPage,
      p.source,
      p.source === 'engine' ? p.engine.engine : null,
      p.source === 'engine' ? p.engine.model : null,
      p.source === 'engine' ? p.engine.version : null,
      p.source === 'engine' ? p.jobId : null,
      p.source === 'engine' ? p.attemptNumber : null,
      p.source === 'initial' ? null : p.source === 'human' ? p.author.kind : p.source,
      p.source === 'human' ? p.author.id : null,
      p.source === 'human' ? p.channel : null,
      p.source === 'import'
        ? JSON.stringify(p.import)
        : p.source === 'engine' && p.lineText
          ? JSON.stringify({ lineText: p.lineText })
          : p.source === 'human' && p.change
            ? JSON.stringify({ change: p.change })
            : null,
    ],
  );
  await indexLines(client, write.pageId, revision, segments);
  return { state: 'committed', revision };
}

/**
 * V2 V5: the current revision's lines in `page_lines`, replaced in the revision's own
 * transaction; and V5's `page.verified` event when this revision is the one that makes every
 * line of the page verified (a page already fully verified emits nothing again).
 */
async function indexLines(
  client: PoolClient,
  pageId: number,
  revision: number,
  segments: readonly Segment[],
): Promise<void> {
  const before = await client.query<{ state: string }>(
    'DELETE FROM page_lines WHERE page_id = $1 RETURNING state',
    [pageId],
  );
  const wasVerified = before.rows.length > 0 && before.rows.every((r) => r.state === 'verified');
  const { rows } = await client.query<{ workspace_id: number; item_id: string }>(
    `INSERT INTO page_lines (page_id, line_index, workspace_id, item_id, revision, state, confidence,
                             text, target, speaker)
     SELECT p.id, l.line_index, p.workspace_id, p.item_id, $2, l.state, l.confidence, l.text,
            l.target, l.speaker
       FROM pages p,
            unnest($3::int[], $4::text[], $5::real[], $6::text[], $7::text[], $8::text[])
              AS l(line_index, state, confidence, text, target, speaker)
      WHERE p.id = $1
     RETURNING workspace_id, item_id`,
    [
      pageId,
      revision,
      segments.map((s) => s.index),
      segments.map((s) => lineStateOf(s)),
      // V10: a line with no confidence (an import, a person's line) has none here either.
      segments.map((s) =>
        s.confidence === undefined ? null : Math.min(1, Math.max(0, s.confidence)),
      ),
      segments.map((s) => s.text),
      segments.map((s) => targetFragment(s.target)),
      segments.map((s) => s.speaker ?? null),
    ],
  );
  const counts = countLineStates(segments);
  if (!counts.fullyVerified || wasVerified || rows.length === 0) return;
  const { workspace_id: workspaceId, item_id: itemId } = rows[0]!;
  await appendEvent(client, {
    workspaceId,
    type: EVENT_TYPES.pageVerified,
    subject: `pages/${pageId}`,
    data: { workspaceId, pageId, itemId, revision, lines: counts.verified },
  });
}
