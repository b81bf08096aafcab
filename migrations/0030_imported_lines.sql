-- V10: imported text (a PDF's text layer, a PAGE, ALTO or hOCR file) has its own line state,
-- `imported`, its source named in the revision's AnnotationPage (`quire:stateBy`). The review
-- queue leaves imported lines out unless asked, and ranks a line without a confidence after
-- every engine line that has one: `review_rank` is the confidence, or 2 for a line with none
-- or an imported one, so the keyset order stays one index.
ALTER TABLE page_lines DROP CONSTRAINT page_lines_state_check;
ALTER TABLE page_lines ADD CONSTRAINT page_lines_state_check
  CHECK (state IN ('machine', 'imported', 'edited', 'verified'));
ALTER TABLE page_lines ALTER COLUMN confidence DROP NOT NULL;

-- Lines written before this one held 0 for "no confidence"; what their revision says is read
-- again, so an imported text layer no longer heads the queue as the least sure reading.
UPDATE page_lines l SET confidence = NULL
  FROM pages p, jsonb_array_elements(p.annotation_page->'items') a
 WHERE p.id = l.page_id AND (a->>'quire:index')::int = l.line_index
   AND a->'quire:confidence' IS NULL;

ALTER TABLE page_lines ADD COLUMN review_rank real GENERATED ALWAYS AS (
  CASE WHEN state = 'imported' OR confidence IS NULL THEN 2 ELSE confidence END) STORED;

DROP INDEX page_lines_review_workspace;
DROP INDEX page_lines_review_item;
CREATE INDEX page_lines_review_workspace ON page_lines (workspace_id, review_rank, page_id, line_index)
  WHERE state <> 'verified';
CREATE INDEX page_lines_review_item ON page_lines (workspace_id, item_id, review_rank, page_id, line_index)
  WHERE state <> 'verified';
