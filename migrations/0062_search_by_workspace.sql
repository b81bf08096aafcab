-- D12: a search reads only its workspace's part of the index. Each page's lexemes are indexed
-- with its workspace in front ('42:word'), so the posting list a query probes holds that
-- workspace's pages alone: its cost follows the workspace's size, not the installation's.
-- The tsvector (positions, weights) stays on the page for ranking, phrase checks and snippets.
CREATE FUNCTION quire_workspace_lexemes(workspace bigint, tsv tsvector) RETURNS text[]
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN ARRAY(SELECT workspace::text || ':' || lexeme FROM unnest(tsvector_to_array(tsv)) AS lexeme);

-- The lexemes a query asks for, in the same form: plainto_tsquery ANDs exactly the lexemes
-- to_tsvector makes of the same text, so a page holding every one is a candidate.
CREATE FUNCTION quire_query_lexemes(workspace bigint, config regconfig, query text) RETURNS text[]
  LANGUAGE sql STABLE STRICT PARALLEL SAFE
  RETURN quire_workspace_lexemes(workspace, to_tsvector(config, query));

CREATE INDEX pages_search_workspace ON pages
  USING gin (quire_workspace_lexemes(workspace_id, search_tsv))
  WHERE deleted_at IS NULL;
DROP INDEX pages_search;
