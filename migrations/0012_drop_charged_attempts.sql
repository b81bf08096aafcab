-- J3: a job's charged attempts are its attempt rows that were not refunded, counted where
-- they are needed (the claim, the close, the auditor). This column was never written, so
-- anyone who read it saw 0 for a job that had used attempts; it goes rather than lie.
ALTER TABLE transcription_jobs DROP COLUMN charged_attempts;
