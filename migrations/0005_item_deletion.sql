-- U3 item deletion through the application path. Attempt rows are audit evidence (A2) and
-- keep their jobs, and jobs keep their page: so a deleted item and its pages stay as
-- tombstones, emptied of content (revisions, checkpoints, blobs, text), never readable again.
ALTER TABLE items ADD COLUMN deleted_at timestamptz;
ALTER TABLE pages ADD COLUMN deleted_at timestamptz;
ALTER TABLE pages ADD CONSTRAINT pages_deleted_are_empty
  CHECK (deleted_at IS NULL OR (blob_key IS NULL AND search_text = '' AND published_snapshot IS NULL));
