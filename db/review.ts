import { type LineState, parseTarget, type SegmentTarget } from '../core/annotation';
import type { Queryable } from './pool';

/**
 * V2 V5: the review queue and the progress counts, read from `page_lines` (the current
 * revision's lines, written by commitRevision in the revision's transaction). SQL only.
 */

/** V2: where a queue page ends: the last line's rank (`reviewRankOf`), page and index. */
export interface ReviewCursor {
  rank: number;
  pageId: number;
  index: number;
}

export interface ReviewLine {
  pageId: number;
  itemId: string;
  kind: 'image' | 'audio';
  /** Image pages: the page's pixel size, for the line's crop. */
  width: number | null;
  height: number | null;
  /** The page revision the line was read from: a save names it (V4). */
  revision: number;
  index: number;
  state: LineState;
  /** The engine's confidence; null for a line that has none (imported, or a person's). */
  confidence: number | null;
  text: string;
  target: SegmentTarget | null;
  speaker: string | null;
}

/**
 * V10: where a line stands in the queue (migration 0030's `review_rank`): its engine
 * confidence, or 2, after every engine line, for an imported line or one without a confidence.
 */
export function reviewRankOf(line: Pick<ReviewLine, 'state' | 'confidence'>): number {
  return line.state === 'imported' || line.confidence === null ? 2 : line.confidence;
}

/**
 * V2 V10: lines not verified, lowest engine confidence first, then lines without one, then by
 * page and line; imported lines only when asked (`includeImported`). One workspace, or one item
 * of it. Keyset-paged on the partial indexes of migration 0030, so the first and the last page
 * cost the same.
 */
export async function listReviewQueue(
  db: Queryable,
  workspaceId: number,
  options: { itemId?: string; includeImported?: boolean; after?: ReviewCursor; limit: number },
): Promise<ReviewLine[]> {
  const after = options.after;
  const { rows } = await db.query(
    `SELECT l.page_id, l.item_id, l.line_index, l.state, l.confidence, l.revision, l.text, l.target,
            l.speaker, p.kind, p.width, p.height
       FROM (SELECT * FROM page_lines
              WHERE workspace_id = $1 AND state <> 'verified'
                AND ($7::boolean OR state <> 'imported')
                AND ($2::text IS NULL OR item_id = $2)
                AND ($3::real IS NULL OR (review_rank, page_id, line_index) > ($3::real, $4::bigint, $5::int))
              ORDER BY review_rank, page_id, line_index
              LIMIT $6) l
       JOIN pages p ON p.id = l.page_id AND p.deleted_at IS NULL
      ORDER BY l.review_rank, l.page_id, l.line_index`,
    [
      workspaceId,
      options.itemId ?? null,
      after?.rank ?? null,
      after?.pageId ?? null,
      after?.index ?? null,
      options.limit,
      options.includeImported === true,
    ],
  );
  return rows.map((r) => ({
    pageId: Number(r.page_id),
    itemId: r.item_id,
    kind: r.kind,
    width: r.width ?? null,
    height: r.height ?? null,
    revision: r.revision,
    index: r.line_index,
    state: r.state,
    confidence: r.confidence ?? null,
    text: r.text ?? '',
    target: parseTarget(r.target) ?? null,
    speaker: r.speaker ?? null,
  }));
}

export interface LineProgress {
  lines: { machine: number; imported: number; edited: number; verified: number; total: number };
  pages: { total: number; withLines: number; fullyVerified: number };
}

/**
 * V5: lines by state and fully verified pages, for a workspace or one of its items. Items
 * and collections read it too (per item, or per workspace).
 */
export async function lineProgress(
  db: Queryable,
  workspaceId: number,
  itemId?: string,
): Promise<LineProgress> {
  const { rows } = await db.query(
    `WITH per_page AS (
       SELECT page_id, count(*) FILTER (WHERE state = 'machine') AS machine,
              count(*) FILTER (WHERE state = 'imported') AS imported,
              count(*) FILTER (WHERE state = 'edited') AS edited,
              count(*) FILTER (WHERE state = 'verified') AS verified, count(*) AS total
         FROM page_lines WHERE workspace_id = $1 AND ($2::text IS NULL OR item_id = $2)
        GROUP BY page_id)
     SELECT coalesce(sum(machine), 0)::int AS machine, coalesce(sum(imported), 0)::int AS imported,
            coalesce(sum(edited), 0)::int AS edited,
            coalesce(sum(verified), 0)::int AS verified, coalesce(sum(total), 0)::int AS total,
            count(*)::int AS with_lines, count(*) FILTER (WHERE verified = total)::int AS fully_verified,
            (SELECT count(*)::int FROM pages WHERE workspace_id = $1 AND deleted_at IS NULL
               AND ($2::text IS NULL OR item_id = $2)) AS pages
       FROM per_page`,
    [workspaceId, itemId ?? null],
  );
  const r = rows[0];
  return {
    lines: {
      machine: r.machine,
      imported: r.imported,
      edited: r.edited,
      verified: r.verified,
      total: r.total,
    },
    pages: { total: r.pages, withLines: r.with_lines, fullyVerified: r.fully_verified },
  };
}

/** V5: the same counts for each item of a workspace that has lines, by item id. */
export async function lineProgressByItem(
  db: Queryable,
  workspaceId: number,
  itemIds: readonly string[],
): Promise<Map<string, LineProgress['lines'] & { fullyVerifiedPages: number }>> {
  const { rows } = await db.query(
    `SELECT item_id, sum(machine)::int AS machine, sum(imported)::int AS imported, sum(edited)::int AS edited,
            sum(verified)::int AS verified, sum(total)::int AS total,
            count(*) FILTER (WHERE verified = total)::int AS fully_verified
       FROM (SELECT item_id, page_id, count(*) FILTER (WHERE state = 'machine') AS machine,
                    count(*) FILTER (WHERE state = 'imported') AS imported,
                    count(*) FILTER (WHERE state = 'edited') AS edited,
                    count(*) FILTER (WHERE state = 'verified') AS verified, count(*) AS total
               FROM page_lines WHERE workspace_id = $1 AND item_id = ANY($2::text[])
              GROUP BY item_id, page_id) p
      GROUP BY item_id`,
    [workspaceId, itemIds],
  );
  return new Map(
    rows.map((r) => [
      r.item_id,
      {
        machine: r.machine,
        imported: r.imported,
        edited: r.edited,
        verified: r.verified,
        total: r.total,
        fullyVerifiedPages: r.fully_verified,
      },
    ]),
  );
}

/** C2, V5: verified lines and fully verified pages of a collection with all it holds. */
export interface VerificationProgress {
  verified: number;
  total: number;
  fullyVerifiedPages: number;
}

/**
 * C2, V5: the verification counts of each collection, its sub-collections' items included,
 * by collection id (a collection none of whose pages has lines is absent).
 */
export async function lineProgressByCollection(
  db: Queryable,
  workspaceId: number,
  collectionIds: readonly number[],
): Promise<Map<number, VerificationProgress>> {
  if (collectionIds.length === 0) return new Map();
  const { rows } = await db.query(
    `WITH RECURSIVE tree AS (
       SELECT id AS root, id FROM collections WHERE workspace_id = $1 AND id = ANY($2::bigint[])
       UNION ALL
       SELECT tree.root, c.id FROM collections c JOIN tree ON c.parent_id = tree.id
        WHERE c.workspace_id = $1),
     per_page AS (
       SELECT tree.root, l.page_id, count(*) FILTER (WHERE l.state = 'verified') AS verified,
              count(*) AS total
         FROM tree
         JOIN items i ON i.workspace_id = $1 AND i.collection_id = tree.id AND i.deleted_at IS NULL
         JOIN page_lines l ON l.workspace_id = $1 AND l.item_id = i.id
        GROUP BY tree.root, l.page_id)
     SELECT root, sum(verified)::int AS verified, sum(total)::int AS total,
            count(*) FILTER (WHERE verified = total)::int AS fully_verified
       FROM per_page GROUP BY root`,
    [workspaceId, collectionIds],
  );
  return new Map(
    rows.map((r) => [
      Number(r.root),
      { verified: r.verified, total: r.total, fullyVerifiedPages: r.fully_verified },
    ]),
  );
}
