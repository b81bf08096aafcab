-- D7/D9: one row per engine step an attempt ran to its end (read, segment, recognize a slice,
-- submit, await, polish): which worker ran it (D9, shown in the console's attempt table) and
-- how it ended. A step whose row exists finished its work and saved it; when its workflow then
-- hears only of a timeout (Quire's own Temporal or PostgreSQL was away while it reported), the
-- attempt resumes uncharged instead of being closed as crashed (D7). A step that died
-- mid-work has no row, and its attempt is still charged `crashed` at the next claim.
CREATE TABLE attempt_steps (
  -- The workflow run and its activity id name one step exactly: ids restart in a new run.
  run_id         text NOT NULL,
  activity_id    text NOT NULL,
  job_id         text NOT NULL,
  attempt_number integer NOT NULL,
  step           text NOT NULL,
  -- The Temporal identity of the worker process that ran the step.
  worker         text NOT NULL,
  outcome        text NOT NULL CHECK (outcome IN ('completed', 'failed', 'paused')),
  finished_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, activity_id),
  FOREIGN KEY (job_id, attempt_number)
    REFERENCES transcription_job_attempts (job_id, attempt_number) ON DELETE CASCADE
);

CREATE INDEX attempt_steps_attempt ON attempt_steps (job_id, attempt_number, finished_at);

-- D8: the settings every process of the installation must share (the blob store's identity:
-- kind, endpoint, bucket, prefix or local root; the Temporal namespace), recorded by the first
-- process that starts and checked by every later one (db/installationSettings.ts).
CREATE TABLE installation_settings (
  name        text PRIMARY KEY,
  value       text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now()
);
