-- V1 V2 V5: the lines of each page's current revision, one row each, derived from the
-- AnnotationPage the same way `search_text` is (written by commitRevision in the same
-- transaction): the review queue reads it lowest engine confidence first, keyset-paged, and
-- progress counts it by state. The state, its author and time live in the revision's
-- AnnotationPage (kept per revision); this table is only the current revision's index.
CREATE TABLE page_lines (
  page_id      bigint NOT NULL REFERENCES pages(id),
  line_index   integer NOT NULL CHECK (line_index >= 0),
  workspace_id bigint NOT NULL,
  item_id      text NOT NULL,
  revision     integer NOT NULL,
  state        text NOT NULL CHECK (state IN ('machine', 'edited', 'verified')),
  -- The engine's confidence; a line with none sorts as the least sure (0).
  confidence   real NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
  -- The line as the queue shows it (copies of the AnnotationPage's, like search_text), so a
  -- queue page never reads a page's whole AnnotationPage.
  text         text NOT NULL,
  target       text NOT NULL,
  speaker      text,
  PRIMARY KEY (page_id, line_index)
);
-- The queue's keyset order (V2), per workspace and per item; verified lines are not in it,
-- so a project near its end reads a small index.
CREATE INDEX page_lines_review_workspace ON page_lines (workspace_id, confidence, page_id, line_index)
  WHERE state <> 'verified';
CREATE INDEX page_lines_review_item ON page_lines (workspace_id, item_id, confidence, page_id, line_index)
  WHERE state <> 'verified';
-- V5: counts by state per item.
CREATE INDEX page_lines_item_state ON page_lines (workspace_id, item_id, state);

-- Pages transcribed before V1: every line `machine`.
INSERT INTO page_lines (page_id, line_index, workspace_id, item_id, revision, state, confidence,
                        text, target, speaker)
SELECT p.id, (a->>'quire:index')::int, p.workspace_id, p.item_id, p.revision,
       coalesce(a->>'quire:state', 'machine'),
       least(1, greatest(0, coalesce((a->>'quire:confidence')::real, 0))),
       coalesce(a->'body'->>'value', ''), a->>'target', a->>'quire:speaker'
  FROM pages p, jsonb_array_elements(p.annotation_page->'items') a
 WHERE p.deleted_at IS NULL
ON CONFLICT DO NOTHING;

-- V3: how many lines a person had edited or verified that an engine's run kept as they were.
ALTER TABLE transcription_jobs ADD COLUMN kept_segments integer NOT NULL DEFAULT 0
  CHECK (kept_segments >= 0);

-- V6: what happens to a recording once the speech engine holds it. Workspaces that exist
-- today keep today's rule (seed 001's order: Quire's copy goes at once); a new workspace
-- keeps its recordings, in the blob store and under its quota, because an archive's
-- recording is the record.
ALTER TABLE workspaces ADD COLUMN recording_retention text NOT NULL DEFAULT 'delete-after-recognition'
  CHECK (recording_retention IN ('keep', 'delete-after-recognition'));
ALTER TABLE workspaces ALTER COLUMN recording_retention SET DEFAULT 'keep';
