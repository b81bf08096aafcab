-- D1: the installation's secret key, by fingerprint (HKDF of the key, never the key). One
-- row is `current`: the key every process must seal with. A rotation retires the previous
-- one; a retired key may still open (processes list it after the current one) but never
-- becomes current again.
CREATE TABLE installation_keys (
  fingerprint   text PRIMARY KEY CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  state         text NOT NULL CHECK (state IN ('current', 'retired')),
  recorded_at   timestamptz NOT NULL DEFAULT now(),
  retired_at    timestamptz,
  CHECK ((state = 'retired') = (retired_at IS NOT NULL))
);
CREATE UNIQUE INDEX installation_keys_one_current ON installation_keys ((true)) WHERE state = 'current';

-- B1: a workspace whose own daily budget is spent claims no attempt until this time (the
-- next UTC midnight), so its waiting jobs write nothing while they wait.
ALTER TABLE workspaces ADD COLUMN budget_paused_until timestamptz;

-- D4: the reconciler compares active jobs with their workflows in Temporal, the least
-- recently checked first; a job whose workflow ended without it is continued in a new run,
-- at most a few times, then failed.
ALTER TABLE transcription_jobs
  ADD COLUMN workflow_checked_at timestamptz,
  ADD COLUMN workflow_restarts integer NOT NULL DEFAULT 0 CHECK (workflow_restarts >= 0);
CREATE INDEX transcription_jobs_active_check ON transcription_jobs (workflow_checked_at NULLS FIRST)
  WHERE status IN ('pending', 'running') AND workflow_started_at IS NOT NULL;
