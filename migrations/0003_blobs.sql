-- U2/U3 additions to the blob tables of 0001.

-- The staged row also names the `.quire-upload-*` temporary, so a crash at any step (before
-- or after the rename) leaves a row from which the cleanup finds every byte written.
ALTER TABLE blob_cleanups ADD COLUMN temp_key text;
-- Why the row exists: an ingest's reservation, a deletion handed over by the application
-- (item deletion, audio released after the engine holds it), or the orphan sweep.
ALTER TABLE blob_cleanups ADD COLUMN reason text NOT NULL DEFAULT 'ingest'
  CHECK (reason IN ('ingest', 'delete', 'orphan'));
-- At most one pending cleanup per object key.
CREATE UNIQUE INDEX blob_cleanups_one_pending_per_key
  ON blob_cleanups (blob_key) WHERE status IN ('staged', 'due', 'failing');
CREATE INDEX blob_cleanups_workspace_pending
  ON blob_cleanups (workspace_id) WHERE status IN ('staged', 'due', 'failing');

-- U3: reference checks look pages up by blob key.
CREATE INDEX pages_blob_key ON pages (blob_key) WHERE blob_key IS NOT NULL;

-- The pages one ingest created, in upload order, with the job started for each: a retried
-- request with the same idempotency key returns exactly this.
CREATE TABLE batch_pages (
  batch_id      text NOT NULL REFERENCES batches(id),
  ordinal       integer NOT NULL CHECK (ordinal >= 0),
  page_id       bigint NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
  job_id        text,
  PRIMARY KEY (batch_id, ordinal),
  UNIQUE (page_id)
);
