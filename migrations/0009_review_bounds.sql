-- Issue 11, item 7: what a careful review found in delivery, retention and streams.

-- E3: one mirror delivery per page at a time. The claim lease lives in its own columns, which
-- a newer revision's upsert leaves alone: the newer revision waits until the PUT in flight has
-- answered (or its lease has run out), so PUTs of one page never overlap and go out in
-- revision order.
ALTER TABLE mirror_outbox ADD COLUMN lease_token uuid;
ALTER TABLE mirror_outbox ADD COLUMN leased_until timestamptz;
ALTER TABLE mirror_outbox ADD CONSTRAINT mirror_outbox_lease_whole
  CHECK ((lease_token IS NULL) = (leased_until IS NULL));

-- W2: a delivery attempt is counted when it is claimed, before the send. `claimed_at` is set
-- while a send is in flight; a claim that finds it still set knows the previous send never
-- reported back (the relay died during it) and logs that attempt as lost.
ALTER TABLE webhook_deliveries ADD COLUMN claimed_at timestamptz;

-- O3 and the auditor: events created before `purged_before` may have been removed by event
-- retention, so the auditor does not expect them any more. Only ever moves forward.
CREATE TABLE retention_marks (
  name          text PRIMARY KEY,
  purged_before timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- S1: open event streams, counted in PostgreSQL so limits hold across web replicas. Each row
-- is one open stream; its replica renews `expires_at` while the stream is open, so the slots
-- of a killed replica free themselves when their lease runs out.
CREATE TABLE stream_leases (
  id            uuid PRIMARY KEY,
  workspace_id  bigint NOT NULL REFERENCES workspaces(id),
  -- Who holds the stream: `key:<api key id>` for the event stream, `console:<api key id>`
  -- for the console's change stream.
  principal     text NOT NULL,
  -- The web process serving it (host and pid), for the operator's eyes only.
  holder        text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL
);
CREATE INDEX stream_leases_workspace ON stream_leases (workspace_id, expires_at);
