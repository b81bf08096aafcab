-- Quire's domain (SPEC §3) and the tables §4-§10 build on.
-- Constraints make illegal states impossible rather than merely unlikely.

CREATE TABLE workspaces (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  quota_bytes   bigint CHECK (quota_bytes IS NULL OR quota_bytes >= 0),
  daily_budget_micros bigint CHECK (daily_budget_micros IS NULL OR daily_budget_micros >= 0),
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored as SHA-256 hashes; the clear key is shown once, at creation.
CREATE TABLE api_keys (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  key_hash      bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
  key_prefix    text NOT NULL,
  label         text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz
);
CREATE INDEX api_keys_workspace ON api_keys (workspace_id);

-- Process-wide settings (global quota, global daily budget).
CREATE TABLE settings (
  key           text PRIMARY KEY,
  value         jsonb NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE items (
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  id            text NOT NULL CHECK (length(id) BETWEEN 1 AND 200),
  title         text,
  external_reference_id text,
  metadata      jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id)
);

CREATE TABLE batches (
  id            text PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  status        text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'canceled')),
  idempotency_key text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  canceled_at   timestamptz,
  CHECK ((status = 'canceled') = (canceled_at IS NOT NULL)),
  UNIQUE (workspace_id, idempotency_key)
);
CREATE INDEX batches_workspace ON batches (workspace_id, id);

-- U1: a blob's key is SHA-256 of the bytes plus a random UUID, so identical bytes never
-- reuse an object that an older cleanup may be deleting.
CREATE TABLE blobs (
  key           text PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  sha256        bytea NOT NULL CHECK (length(sha256) = 32),
  size_bytes    bigint NOT NULL CHECK (size_bytes >= 0),
  media_type    text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  -- U3: set by a cleanup that has checked references; reference creators reject it.
  delete_fenced_at timestamptz,
  deleted_at    timestamptz
);
CREATE INDEX blobs_workspace ON blobs (workspace_id);

-- U2: staged before the first byte is written; holds the reserved bytes against quotas
-- until retired (the page references the blob) or done (the object is gone).
CREATE TABLE blob_cleanups (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  blob_key      text NOT NULL,
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  size_bytes    bigint NOT NULL CHECK (size_bytes >= 0),
  status        text NOT NULL DEFAULT 'staged'
                CHECK (status IN ('staged', 'due', 'retired', 'deleted', 'failing')),
  reserve_until timestamptz NOT NULL,
  attempts      integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  last_error    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX blob_cleanups_pending ON blob_cleanups (status, reserve_until) WHERE status IN ('staged', 'due', 'failing');
CREATE INDEX blob_cleanups_key ON blob_cleanups (blob_key);

CREATE TABLE pages (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id  bigint NOT NULL,
  item_id       text NOT NULL,
  position      integer NOT NULL CHECK (position >= 0),
  kind          text NOT NULL CHECK (kind IN ('image', 'audio')),
  canvas_uri    text NOT NULL,
  blob_key      text REFERENCES blobs(key),
  media_type    text,
  width         integer CHECK (width IS NULL OR width > 0),
  height        integer CHECK (height IS NULL OR height > 0),
  duration_ms   integer CHECK (duration_ms IS NULL OR duration_ms >= 0),
  -- The canonical AnnotationPage; revision starts at 0 (empty) and is never null.
  revision      integer NOT NULL DEFAULT 0 CHECK (revision >= 0),
  annotation_page jsonb NOT NULL,
  published_revision integer CHECK (published_revision IS NULL OR published_revision <= revision),
  published_snapshot jsonb,
  -- The derived full-text index of the current revision.
  search_text   text NOT NULL DEFAULT '',
  search_tsv    tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (workspace_id, item_id) REFERENCES items(workspace_id, id),
  UNIQUE (workspace_id, item_id, position),
  CHECK (kind <> 'audio' OR width IS NULL)
);
CREATE INDEX pages_search ON pages USING gin (search_tsv);
CREATE INDEX pages_workspace ON pages (workspace_id, id);

-- Every revision is kept, each with its provenance. Revision 0 is the empty page.
CREATE TABLE page_revisions (
  page_id       bigint NOT NULL REFERENCES pages(id),
  revision      integer NOT NULL CHECK (revision >= 0),
  annotation_page jsonb NOT NULL,
  source        text NOT NULL CHECK (source IN ('initial', 'engine', 'human')),
  engine        text,
  model         text,
  model_version text,
  job_id        text,
  attempt_number integer,
  edited_by     text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (page_id, revision),
  CHECK (source <> 'engine' OR (job_id IS NOT NULL AND attempt_number IS NOT NULL AND engine IS NOT NULL))
);

CREATE TABLE transcription_jobs (
  id            text PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  page_id       bigint NOT NULL REFERENCES pages(id),
  batch_id      text REFERENCES batches(id),
  workflow_id   text NOT NULL UNIQUE,
  status        text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'running', 'completed', 'failed', 'canceled', 'superseded')),
  provider      text NOT NULL,
  snapshot      jsonb NOT NULL,
  input_revision integer NOT NULL CHECK (input_revision >= 0),
  idempotency_key text,
  external_reference_id text,
  metadata      jsonb NOT NULL DEFAULT '{}'::jsonb,
  stage         text,
  -- Attempts charged against maxAttempts (refunded pauses do not count).
  charged_attempts integer NOT NULL DEFAULT 0 CHECK (charged_attempts >= 0),
  last_attempt_number integer NOT NULL DEFAULT 0 CHECK (last_attempt_number >= 0),
  completed_segments integer NOT NULL DEFAULT 0,
  failed_segments integer NOT NULL DEFAULT 0,
  total_segments integer,
  result_revision integer,
  error_category text,
  error_detail  text,
  superseded_by text REFERENCES transcription_jobs(id) DEFERRABLE INITIALLY DEFERRED,
  workflow_started_at timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  ended_at      timestamptz,
  CHECK ((status IN ('pending', 'running')) = (ended_at IS NULL)),
  CHECK ((status = 'completed') = (result_revision IS NOT NULL)),
  CHECK (status <> 'completed' OR completed_segments + failed_segments = total_segments),
  CHECK (status <> 'superseded' OR superseded_by IS NOT NULL),
  UNIQUE (workspace_id, idempotency_key)
);
-- At most one active job per page (J4 supersedes the old one in the same transaction).
CREATE UNIQUE INDEX transcription_jobs_one_active_per_page
  ON transcription_jobs (page_id) WHERE status IN ('pending', 'running');
CREATE INDEX transcription_jobs_list ON transcription_jobs (workspace_id, id DESC);
CREATE INDEX transcription_jobs_list_status ON transcription_jobs (workspace_id, status, id DESC);
CREATE INDEX transcription_jobs_page ON transcription_jobs (workspace_id, page_id, id DESC);
CREATE INDEX transcription_jobs_batch ON transcription_jobs (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX transcription_jobs_unstarted ON transcription_jobs (created_at)
  WHERE workflow_started_at IS NULL AND status = 'pending';

-- A1/A2: one claimed run of a job. Audit evidence: only `running -> outcome`, never deleted.
CREATE TABLE transcription_job_attempts (
  job_id        text NOT NULL REFERENCES transcription_jobs(id),
  attempt_number integer NOT NULL CHECK (attempt_number >= 1),
  snapshot      jsonb NOT NULL,
  input_revision integer NOT NULL,
  owner         text NOT NULL,
  -- SHA-256 of the attempt's random token; the clear token never reaches the database.
  token_hash    bytea NOT NULL CHECK (length(token_hash) = 32),
  started_at    timestamptz NOT NULL DEFAULT now(),
  ended_at      timestamptz,
  outcome       text NOT NULL DEFAULT 'running'
                CHECK (outcome IN ('running', 'completed', 'retryable_failed', 'failed', 'canceled', 'superseded', 'lease_expired')),
  refunded      boolean NOT NULL DEFAULT false,
  result_revision integer,
  error_category text CHECK (error_category IS NULL OR error_category IN
                ('credit', 'auth', 'outage', 'budget', 'timeout', 'invalid', 'content', 'image', 'internal', 'crashed', 'conflict')),
  error_detail  text,
  completed_segments integer NOT NULL DEFAULT 0,
  failed_segments integer NOT NULL DEFAULT 0,
  total_segments integer,
  PRIMARY KEY (job_id, attempt_number),
  CHECK ((outcome = 'running') = (ended_at IS NULL)),
  CHECK ((outcome = 'completed') = (result_revision IS NOT NULL)),
  CHECK (NOT refunded OR outcome = 'retryable_failed')
);
CREATE UNIQUE INDEX transcription_job_attempts_one_running
  ON transcription_job_attempts (job_id) WHERE outcome = 'running';

CREATE FUNCTION quire_attempts_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'attempt rows are audit evidence and are never deleted (A2)'
      USING ERRCODE = 'restrict_violation';
  END IF;
  IF OLD.outcome <> 'running' THEN
    RAISE EXCEPTION 'attempt %/% left running and can no longer change (A2)', OLD.job_id, OLD.attempt_number
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.job_id <> OLD.job_id OR NEW.attempt_number <> OLD.attempt_number
     OR NEW.token_hash <> OLD.token_hash OR NEW.snapshot <> OLD.snapshot
     OR NEW.input_revision <> OLD.input_revision OR NEW.started_at <> OLD.started_at THEN
    RAISE EXCEPTION 'attempt identity is immutable (A2)' USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER transcription_job_attempts_guard
  BEFORE UPDATE OR DELETE ON transcription_job_attempts
  FOR EACH ROW EXECUTE FUNCTION quire_attempts_guard();

-- T2 checkpoints: each stage's output, saved before the next stage starts and before any
-- copy (ours or the engine's) may be deleted. A new attempt resumes from these rows.
CREATE TABLE job_checkpoints (
  job_id        text NOT NULL REFERENCES transcription_jobs(id),
  stage         text NOT NULL CHECK (stage IN ('segment', 'recognize', 'submit', 'polish')),
  seq           integer NOT NULL CHECK (seq >= 0),
  attempt_number integer NOT NULL,
  payload       jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, stage, seq)
);

-- Engine-side jobs (audio), for the stranded-job sweep (O3).
CREATE TABLE engine_jobs (
  provider      text NOT NULL,
  engine_job_id text NOT NULL,
  job_id        text NOT NULL REFERENCES transcription_jobs(id),
  created_at    timestamptz NOT NULL DEFAULT now(),
  deleted_at    timestamptz,
  PRIMARY KEY (provider, engine_job_id)
);
CREATE INDEX engine_jobs_live ON engine_jobs (created_at) WHERE deleted_at IS NULL;

-- E1: the transactional outbox. Writers take a transaction-level advisory lock before
-- inserting, so ids become visible in commit order and a reader never skips one.
CREATE TABLE event_outbox (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id  bigint REFERENCES workspaces(id),
  type          text NOT NULL,
  subject       text,
  data          jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX event_outbox_workspace ON event_outbox (workspace_id, id);

CREATE FUNCTION quire_event_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('quire_events', NEW.id::text);
  RETURN NEW;
END $$;
CREATE TRIGGER event_outbox_notify AFTER INSERT ON event_outbox
  FOR EACH ROW EXECUTE FUNCTION quire_event_notify();

CREATE TABLE webhook_subscriptions (
  id            text PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  url           text NOT NULL,
  -- Encrypted at rest (AES-256-GCM); write-only through the API.
  secret_ciphertext bytea NOT NULL,
  event_types   text[],
  created_at    timestamptz NOT NULL DEFAULT now(),
  disabled_at   timestamptz,
  disabled_reason text
);
CREATE INDEX webhook_subscriptions_workspace ON webhook_subscriptions (workspace_id);

CREATE TABLE webhook_deliveries (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  subscription_id text NOT NULL REFERENCES webhook_subscriptions(id),
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  event_id      bigint NOT NULL REFERENCES event_outbox(id),
  status        text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'succeeded', 'failed', 'dead')),
  attempt_count integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_status_code integer,
  last_error    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (subscription_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';

CREATE TABLE webhook_delivery_attempts (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id   bigint NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  attempted_at  timestamptz NOT NULL DEFAULT now(),
  status_code   integer,
  latency_ms    integer,
  error         text
);

-- E3: a coalescing, revision-fenced mirror row per page.
CREATE TABLE mirror_outbox (
  page_id       bigint PRIMARY KEY REFERENCES pages(id),
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  revision      integer NOT NULL,
  status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failing')),
  attempts      integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error    text,
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Q3: a provider's queue is active or paused.
CREATE TABLE provider_state (
  provider      text PRIMARY KEY,
  status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
  reason        text CHECK (reason IS NULL OR reason IN ('credit', 'auth', 'outage', 'budget')),
  paused_at     timestamptz,
  resume_at     timestamptz,
  episode       integer NOT NULL DEFAULT 0,
  outage_step   integer NOT NULL DEFAULT 0,
  notified_episode integer NOT NULL DEFAULT 0,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  CHECK ((status = 'paused') = (reason IS NOT NULL))
);

-- B1: the per-call ledger that spend is summed from.
CREATE TABLE provider_calls (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  job_id        text REFERENCES transcription_jobs(id),
  attempt_number integer,
  provider      text NOT NULL,
  operation     text NOT NULL,
  units         numeric NOT NULL DEFAULT 0,
  unit          text NOT NULL,
  cost_micros   bigint NOT NULL DEFAULT 0,
  outcome       text NOT NULL,
  occurred_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_calls_spend ON provider_calls (workspace_id, occurred_at);
CREATE INDEX provider_calls_day ON provider_calls (occurred_at);
