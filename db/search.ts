import type { LineState } from '../core/annotation';
import {
  MARK_START,
  MARK_STOP,
  parseMarkedSnippet,
  SEARCH_CONFIG_NAMES,
  type Snippet,
} from '../core/archive';
import type { MediaKind } from '../core/media';
import type { Queryable } from './pool';

/**
 * F3: full-text search of current revisions, one workspace at a time. A page is indexed in its
 * item's text-search configuration (its language, `simple` otherwise), so the query is parsed
 * once per configuration the workspace uses and each branch probes the GIN index
 * (`pages_search_workspace`) for its own pages: lexemes are indexed with their workspace in
 * front, so a query reads only its workspace's posting lists (D12). Snippets are made only for the hits returned: which
 * lines match, each marked by `ts_headline`, named by its segment index.
 */

export interface SearchLine {
  /** The segment (line) the words were found in: `?line=` of the page view. */
  segmentIndex: number;
  snippet: Snippet;
}

export interface SearchHit {
  pageId: number;
  itemId: string;
  itemTitle: string | null;
  position: number;
  canvasUri: string;
  kind: MediaKind;
  revision: number;
  rank: number;
  /** Up to three lines in line order, chosen among those holding every word first. */
  lines: SearchLine[];
}

export interface SearchFilter {
  q: string;
  limit: number;
  /** Only items in this collection or any collection below it. */
  collectionId?: number;
  kind?: MediaKind;
  /**
   * F3 with V1: only pages where a line in this state holds the words, and only those lines
   * shown (`verified`: text a person has checked).
   */
  lineState?: LineState;
}

/** The configurations a workspace's items are indexed in (a few; `simple` at least). */
export async function configsInUse(db: Queryable, workspaceId: number): Promise<string[]> {
  const { rows } = await db.query<{ cfg: string }>(
    'SELECT DISTINCT search_config::text AS cfg FROM items WHERE workspace_id = $1',
    [workspaceId],
  );
  const names = rows.map((r) => r.cfg).filter((c) => SEARCH_CONFIG_NAMES.includes(c));
  return names.length > 0 ? names : ['simple'];
}

/**
 * Ranking reads every candidate's whole tsvector, so a word on half of a million pages
 * would cost seconds. The hits are ranked among at most this many matching pages per
 * configuration (the first the index yields): for a query that common, "best first" holds
 * within those, and another word or a collection filter narrows it to a full ranking.
 */
export const RANK_CANDIDATES = 5000;

const HEADLINE_OPTIONS = `StartSel=${MARK_START}, StopSel=${MARK_STOP}, MaxWords=30, MinWords=12, MaxFragments=1`;

/**
 * The statement a search runs, for `configs` (the configurations in use): exported so the
 * benchmark can EXPLAIN exactly what the API runs.
 */
export function searchStatement(
  workspaceId: number,
  filter: SearchFilter,
  configs: readonly string[],
): { text: string; values: unknown[] } {
  // One branch per configuration, each a probe of the workspace's own posting lists in
  // `pages_search_workspace` (D12), the full tsquery checked on the candidates.
  const params: unknown[] = [
    workspaceId,
    filter.q,
    filter.collectionId ?? null,
    filter.kind ?? null,
    filter.limit,
    HEADLINE_OPTIONS,
    filter.lineState ?? null,
  ];
  const branches = configs.map((cfg) => {
    params.push(cfg);
    const c = `$${params.length}::regconfig`;
    return `SELECT m.id, m.search_config, plainto_tsquery(${c}, $2) AS q,
                   ts_rank(m.search_tsv, plainto_tsquery(${c}, $2)) AS rank
              FROM (SELECT p.id, p.search_config, p.search_tsv FROM pages p
                     WHERE quire_workspace_lexemes(p.workspace_id, p.search_tsv)
                             @> quire_query_lexemes($1::bigint, ${c}, $2)
                       -- Only stop words: nothing to probe, and nothing matches.
                       AND cardinality(quire_query_lexemes($1::bigint, ${c}, $2)) > 0
                       AND p.search_tsv @@ plainto_tsquery(${c}, $2) AND p.search_config = ${c}
                       AND p.workspace_id = $1 AND p.deleted_at IS NULL
                       AND ($4::text IS NULL OR p.kind = $4)
                       AND ($7::text IS NULL OR EXISTS (
                             SELECT 1 FROM page_lines pl WHERE pl.page_id = p.id AND pl.state = $7
                                AND to_tsvector(${c}, translate(pl.text, '<>', '  '))
                                    @@ plainto_tsquery(${c}, $2)))
                       AND ($3::bigint IS NULL OR EXISTS (
                             SELECT 1 FROM items i WHERE i.workspace_id = p.workspace_id AND i.id = p.item_id
                                AND i.collection_id IN (SELECT id FROM scope)))
                     LIMIT ${RANK_CANDIDATES}) m`;
  });
  return {
    values: params,
    text: `WITH RECURSIVE scope AS (
       SELECT id, 0 AS depth FROM collections WHERE workspace_id = $1 AND id = $3::bigint
       UNION ALL
       SELECT c.id, scope.depth + 1 FROM collections c JOIN scope ON c.parent_id = scope.id
        WHERE c.workspace_id = $1 AND scope.depth < 1000),
     ranked AS MATERIALIZED (
       ${branches.join('\n UNION ALL \n')}
       ORDER BY rank DESC, id LIMIT $5),
     -- Only the returned hits are read whole (their lines) and marked.
     hits AS (
       SELECT r.id, r.rank, r.q, r.search_config, p.item_id, p.position, p.canvas_uri, p.kind,
              p.revision, p.annotation_page
         FROM ranked r JOIN pages p ON p.id = r.id)
     SELECT h.id, h.item_id, i.title AS item_title, h.position, h.canvas_uri, h.kind, h.revision, h.rank,
            l.segment_index, l.headline
       FROM hits h
       JOIN items i ON i.workspace_id = $1 AND i.id = h.item_id
       -- Each line's text with the marks' control characters taken out and angle brackets
       -- standing in as two others (core/archive.ts gives them back).
       LEFT JOIN LATERAL (
         SELECT m.segment_index,
                ts_headline(h.search_config, m.text, h.q, $6) AS headline
           FROM (SELECT (a->>'quire:index')::int AS segment_index,
                        coalesce(a->>'quire:state', 'machine') AS state,
                        translate(a->'body'->>'value', E'<>\\x02\\x03\\x04\\x05', E'\\x04\\x05') AS text
                   FROM jsonb_array_elements(h.annotation_page->'items') a) m
          WHERE to_tsvector(h.search_config, m.text)
                @@ (replace(h.q::text, ' & ', ' | '))::tsquery
            AND ($7::text IS NULL OR m.state = $7)
          ORDER BY (to_tsvector(h.search_config, m.text) @@ h.q) DESC, m.segment_index
          LIMIT 3) l ON true
      ORDER BY h.rank DESC, h.id, l.segment_index`,
  };
}

export async function searchArchive(
  db: Queryable,
  workspaceId: number,
  filter: SearchFilter,
): Promise<SearchHit[]> {
  const configs = await configsInUse(db, workspaceId);
  const { rows } = await db.query(searchStatement(workspaceId, filter, configs));
  const hits: SearchHit[] = [];
  const byId = new Map<number, SearchHit>();
  for (const r of rows) {
    const id = Number(r.id);
    let hit = byId.get(id);
    if (!hit) {
      hit = {
        pageId: id,
        itemId: r.item_id,
        itemTitle: r.item_title ?? null,
        position: r.position,
        canvasUri: r.canvas_uri,
        kind: r.kind,
        revision: r.revision,
        rank: Number(r.rank),
        lines: [],
      };
      byId.set(id, hit);
      hits.push(hit);
    }
    if (r.segment_index !== null && r.headline !== null) {
      hit.lines.push({ segmentIndex: r.segment_index, snippet: parseMarkedSnippet(r.headline) });
    }
  }
  return hits;
}
