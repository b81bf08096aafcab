-- M1, M4: operators of the installation, their controls over workspaces, and the audit log.

-- M1: operator keys act on the installation. Stored as SHA-256 hashes like workspace API keys;
-- the clear key is shown once, at creation (`quire admin create-operator-key`).
CREATE TABLE operator_keys (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  key_hash      bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
  key_prefix    text NOT NULL,
  label         text CHECK (label IS NULL OR length(label) BETWEEN 1 AND 200),
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz
);

-- M4: a cap on a workspace's jobs holding a slot (active and admitted); null is no cap.
ALTER TABLE workspaces ADD COLUMN active_job_cap integer
  CHECK (active_job_cap IS NULL OR active_job_cap BETWEEN 1 AND 100000);
-- M4: the providers a workspace's jobs may use; null is every provider the installation has.
ALTER TABLE workspaces ADD COLUMN enabled_providers text[];

-- M4: a job over its workspace's cap waits `pending`, without a workflow, until the dispatcher
-- admits it (oldest first) when a slot frees. False for every job recorded before a cap
-- existed, so they hold their slots as before. A waiting job can never have an attempt.
ALTER TABLE transcription_jobs ADD COLUMN awaiting_slot boolean NOT NULL DEFAULT false;
ALTER TABLE transcription_jobs ADD CONSTRAINT transcription_jobs_waiting_has_no_attempt
  CHECK (NOT awaiting_slot OR last_attempt_number = 0);
CREATE INDEX transcription_jobs_awaiting_slot
  ON transcription_jobs (workspace_id, created_at, id) WHERE awaiting_slot AND status = 'pending';
-- The slots held: active jobs that were admitted.
CREATE INDEX transcription_jobs_holding_slot
  ON transcription_jobs (workspace_id) WHERE NOT awaiting_slot AND status IN ('pending', 'running');

-- A job that ends frees a slot: when its workspace has jobs waiting, the dispatcher is woken
-- (the notification is only a hint; the dispatcher also polls).
CREATE FUNCTION quire_job_slot_freed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM transcription_jobs
              WHERE workspace_id = NEW.workspace_id AND awaiting_slot AND status = 'pending') THEN
    PERFORM pg_notify('quire_job_slots', NEW.workspace_id::text);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER transcription_jobs_slot_freed AFTER UPDATE OF status ON transcription_jobs
  FOR EACH ROW WHEN (OLD.status IN ('pending', 'running') AND NEW.status NOT IN ('pending', 'running'))
  EXECUTE FUNCTION quire_job_slot_freed();

-- M4: every operator action, and every cancel, resume and re-run by anyone. Append-only: the
-- trigger below refuses UPDATE, DELETE and TRUNCATE. `workspace_id` is the workspace the target
-- belongs to (null for installation-wide targets): a workspace sees its own rows.
CREATE TABLE audit_log (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at            timestamptz NOT NULL DEFAULT now(),
  actor_kind    text NOT NULL CHECK (actor_kind IN ('operator', 'workspace', 'cli')),
  -- operator_keys.id for operators, api_keys.id for workspace keys and console sessions;
  -- null for the admin CLI, which runs with the database's own credentials.
  actor_key_id  bigint,
  action        text NOT NULL CHECK (action ~ '^[a-z_]+(\.[a-z_]+)+$'),
  target        text NOT NULL,
  workspace_id  bigint REFERENCES workspaces(id),
  before        jsonb,
  after         jsonb,
  CHECK ((actor_kind = 'cli') = (actor_key_id IS NULL))
);
CREATE INDEX audit_log_workspace ON audit_log (workspace_id, id DESC);

CREATE FUNCTION quire_audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only (M4): % refused', TG_OP
    USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION quire_audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION quire_audit_log_append_only();
