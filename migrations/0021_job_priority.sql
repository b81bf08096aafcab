-- P8: a job's priority class is part of the job, not only of its first start: a page a
-- person submitted that waits under its workspace's active-job cap (M4), or that the
-- reconciler starts after a crash (J6, D4), starts as interactive as it was asked for.
ALTER TABLE transcription_jobs
  ADD COLUMN priority text NOT NULL DEFAULT 'bulk' CHECK (priority IN ('interactive', 'bulk'));
