-- I4: every image page's pyramidal derivative (a tiled pyramidal TIFF the Image API reads its
-- tiles from), made once by the derivative maintenance job and kept in the blob store as a
-- blob of its own: counted against quota like the master and handed to the fenced cleanup
-- with its page.
ALTER TABLE pages ADD COLUMN derivative_key text;
-- Why the last try made nothing (a stable code, never a message): `undecodable` is final,
-- `quota_exceeded` and other codes are tried again after a pause.
ALTER TABLE pages ADD COLUMN derivative_error text;
ALTER TABLE pages ADD COLUMN derivative_tried_at timestamptz;

-- U3: reference checks look derivatives up by key, as they do masters.
CREATE INDEX pages_derivative_key ON pages (derivative_key) WHERE derivative_key IS NOT NULL;
-- The derivative job's queue: live image pages with a master and no derivative yet.
CREATE INDEX pages_derivative_due ON pages (id)
  WHERE kind = 'image' AND derivative_key IS NULL AND blob_key IS NOT NULL AND deleted_at IS NULL;
