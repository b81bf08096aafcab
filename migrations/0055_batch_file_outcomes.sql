-- I9: in a multi-file batch a refused file is refused alone. The answer lists each file's
-- outcome (stored with its page count, or refused with its code), and a retry with the same
-- Idempotency-Key must answer the same list: it is kept with the batch. Batches written
-- before this list existed keep an empty one.
ALTER TABLE batches ADD COLUMN file_outcomes jsonb NOT NULL DEFAULT '[]'::jsonb;
