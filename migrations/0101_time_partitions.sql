-- D11: the append-mostly tables are partitioned by time, so retention drops a whole month at
-- once (db/partitions.ts, db/retention.ts) instead of deleting row after row: no dead tuples to
-- vacuum, no index bloat, no WAL for every removed row.
--
--   event_outbox               by created_at         (the event's time)
--   webhook_deliveries         by event_created_at   (the time of the event it carries)
--   webhook_delivery_attempts  by event_created_at   (the same: its delivery's event's time)
--   provider_calls             by occurred_at
--
-- Deliveries and their attempts are partitioned by their event's time, not their own, so an
-- event, its deliveries and their attempts share one month and leave together: the foreign
-- keys between them (which now carry the partition key) never keep a month alive in another
-- table. audit_log is not partitioned and never dropped: audit rows are append-only evidence
-- (M4), and so are the attempts of transcription jobs (A2).
--
-- Partitions are made by Quire itself, not by pg_partman: the daily maintenance pass creates
-- the months ahead and drops the expired ones (quire_add_time_partition below), so PostgreSQL
-- needs no extension, and the retention rule (a month of events goes only when the relay has
-- fanned all of it out and none of its deliveries is pending) stays in Quire's own code.
--
-- How existing rows move: they do not. Each old table becomes the first partition of its new
-- table, covering all time up to this migration, and is dropped whole once retention passes
-- its end. Copying instead would rewrite every row (twice the WAL, and the old table to read
-- from while the copy runs). The work that scans rows is done first, under locks that let
-- readers go on (SHARE for the index builds, SHARE UPDATE EXCLUSIVE to validate the bound):
-- the unique indexes that now include the partition key and a validated CHECK of the bound,
-- which lets SET NOT NULL and ATTACH PARTITION skip their own scans. Only then are the
-- catalogue steps taken under ACCESS EXCLUSIVE (renames, swapping the primary key for the
-- prebuilt index, the attach), and the transaction commits right after them: readers wait for
-- milliseconds, not for a scan. The new keys of deliveries to their events and of attempts to
-- their deliveries, which must be checked over the old rows, follow in 0102 under a lock
-- readers pass. Writers wait for the whole migration. Deliveries and attempts learn their event's time first (one
-- UPDATE of each table into the column 0100 added, row locks only).

-- Creates the partition [from_at, to_at) of `parent`, named `<parent>_pYYYY_MM` by from_at's
-- UTC month, unless it exists. Made as a plain table and attached, because ATTACH PARTITION
-- takes SHARE UPDATE EXCLUSIVE on the parent where CREATE TABLE ... PARTITION OF takes ACCESS
-- EXCLUSIVE: readers and writers of the parent go on while a month is added.
CREATE FUNCTION quire_add_time_partition(parent text, from_at timestamptz, to_at timestamptz)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  name text := parent || '_p' || to_char(from_at AT TIME ZONE 'UTC', 'YYYY_MM');
BEGIN
  IF to_regclass(name) IS NOT NULL THEN
    RETURN name;
  END IF;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name, parent);
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                 parent, name, from_at, to_at);
  RETURN name;
END $$;

-- The first of the UTC month after `at`.
CREATE FUNCTION quire_next_month(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
  SELECT (date_trunc('month', at AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'
$$;

-- Writers stop here (readers go on) so that no row lands after the bound is chosen.
LOCK TABLE event_outbox, webhook_deliveries, webhook_delivery_attempts, provider_calls IN SHARE MODE;

CREATE TEMPORARY TABLE quire_partition_bounds ON COMMIT DROP AS
  SELECT greatest(clock_timestamp(),
                  (SELECT max(created_at) FROM event_outbox) + interval '1 microsecond') AS events,
         greatest(clock_timestamp(),
                  (SELECT max(occurred_at) FROM provider_calls) + interval '1 microsecond') AS calls;

-- ---- Row work, readers unaffected --------------------------------------------------------

UPDATE webhook_deliveries d SET event_created_at = e.created_at FROM event_outbox e WHERE e.id = d.event_id;
UPDATE webhook_delivery_attempts a SET event_created_at = d.event_created_at
  FROM webhook_deliveries d WHERE d.id = a.delivery_id;

CREATE UNIQUE INDEX event_outbox_history_key ON event_outbox (id, created_at);
CREATE INDEX event_outbox_history_position_plain ON event_outbox (position);
CREATE UNIQUE INDEX webhook_deliveries_history_key ON webhook_deliveries (id, event_created_at);
CREATE UNIQUE INDEX webhook_deliveries_history_once
  ON webhook_deliveries (subscription_id, event_id, event_created_at);
CREATE UNIQUE INDEX webhook_delivery_attempts_history_key
  ON webhook_delivery_attempts (id, event_created_at);
CREATE UNIQUE INDEX provider_calls_history_key ON provider_calls (id, occurred_at);

DO $$
DECLARE
  b record;
BEGIN
  SELECT * INTO b FROM quire_partition_bounds;
  EXECUTE format('ALTER TABLE event_outbox ADD CONSTRAINT event_outbox_history_bound
                    CHECK (created_at IS NOT NULL AND created_at < %L) NOT VALID', b.events);
  EXECUTE format('ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_history_bound
                    CHECK (event_created_at IS NOT NULL AND event_created_at < %L) NOT VALID', b.events);
  EXECUTE format('ALTER TABLE webhook_delivery_attempts ADD CONSTRAINT webhook_delivery_attempts_history_bound
                    CHECK (event_created_at IS NOT NULL AND event_created_at < %L) NOT VALID', b.events);
  EXECUTE format('ALTER TABLE provider_calls ADD CONSTRAINT provider_calls_history_bound
                    CHECK (occurred_at IS NOT NULL AND occurred_at < %L) NOT VALID', b.calls);
END $$;
ALTER TABLE event_outbox VALIDATE CONSTRAINT event_outbox_history_bound;
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_history_bound;
ALTER TABLE webhook_delivery_attempts VALIDATE CONSTRAINT webhook_delivery_attempts_history_bound;
ALTER TABLE provider_calls VALIDATE CONSTRAINT provider_calls_history_bound;

-- ---- Catalogue steps, ACCESS EXCLUSIVE until the commit that follows --------------------

-- The keys between the three webhook tables are remade below over (id, time).
ALTER TABLE webhook_delivery_attempts DROP CONSTRAINT webhook_delivery_attempts_delivery_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_fkey;
-- Once per subscription and event, now with the event's time in the key (for the attach to
-- match it, the prebuilt index must back a constraint of the same kind).
ALTER TABLE webhook_deliveries
  DROP CONSTRAINT webhook_deliveries_subscription_id_event_id_key,
  ADD CONSTRAINT webhook_deliveries_history_once UNIQUE USING INDEX webhook_deliveries_history_once;

-- Each old table: its identity ends (the new table draws ids from where it stopped), its
-- primary key becomes the prebuilt (id, time) index, and it takes the name `<table>_history`.
DO $$
DECLARE
  t record;
  last bigint;
BEGIN
  FOR t IN SELECT * FROM (VALUES
      ('event_outbox', 'created_at', 'event_outbox_history_key'),
      ('webhook_deliveries', 'event_created_at', 'webhook_deliveries_history_key'),
      ('webhook_delivery_attempts', 'event_created_at', 'webhook_delivery_attempts_history_key'),
      ('provider_calls', 'occurred_at', 'provider_calls_history_key')) AS v(tab, key, idx)
  LOOP
    EXECUTE format('SELECT coalesce(pg_sequence_last_value(%L), 0)',
                   pg_get_serial_sequence(t.tab, 'id')) INTO last;
    -- Made before the rename, so LIKE copies the columns, defaults, identity and checks.
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS)
                      PARTITION BY RANGE (%I)', t.tab || '_next', t.tab, t.key);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t.tab || '_next', t.tab || '_history_bound');
    EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET NOT NULL', t.tab || '_next', t.key);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id RESTART WITH %s', t.tab || '_next', last + 1);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id DROP IDENTITY', t.tab);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET NOT NULL', t.tab, t.key);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t.tab, t.tab || '_pkey');
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY USING INDEX %I',
                   t.tab, t.tab || '_history_pkey', t.idx);
    EXECUTE format('ALTER TABLE %I RENAME TO %I', t.tab, t.tab || '_history');
    EXECUTE format('ALTER TABLE %I RENAME TO %I', t.tab || '_next', t.tab);
    EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (id, %I)', t.tab, t.key);
  END LOOP;
END $$;

-- The old indexes keep their names on the history partitions; the new tables' indexes take
-- the names the code and the plans know.
ALTER INDEX event_outbox_position RENAME TO event_outbox_history_position;
ALTER INDEX event_outbox_workspace_position RENAME TO event_outbox_history_workspace_position;
ALTER INDEX event_outbox_unsequenced RENAME TO event_outbox_history_unsequenced;
ALTER INDEX webhook_deliveries_due RENAME TO webhook_deliveries_history_due;
ALTER INDEX webhook_deliveries_subscription RENAME TO webhook_deliveries_history_subscription;
ALTER INDEX webhook_deliveries_event RENAME TO webhook_deliveries_history_event;
ALTER INDEX webhook_delivery_attempts_delivery RENAME TO webhook_delivery_attempts_history_delivery;
ALTER INDEX provider_calls_spend RENAME TO provider_calls_history_spend;
ALTER INDEX provider_calls_day RENAME TO provider_calls_history_day;

-- Positions stay unique by the sequencer's lock (0090); an index over a partitioned table can
-- be unique only with the partition key in it, which would promise nothing more.
CREATE INDEX event_outbox_position ON event_outbox (position);
CREATE INDEX event_outbox_workspace_position ON event_outbox (workspace_id, position);
CREATE INDEX event_outbox_unsequenced ON event_outbox (id) WHERE position IS NULL;

ALTER TABLE webhook_deliveries
  ADD CONSTRAINT webhook_deliveries_once UNIQUE (subscription_id, event_id, event_created_at),
  ADD CONSTRAINT webhook_deliveries_subscription_id_fkey FOREIGN KEY (subscription_id)
    REFERENCES webhook_subscriptions (id),
  ADD CONSTRAINT webhook_deliveries_workspace_id_fkey FOREIGN KEY (workspace_id)
    REFERENCES workspaces (id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_id, id DESC);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- The keys of deliveries to their events and of attempts to their deliveries come in 0102.
CREATE INDEX webhook_delivery_attempts_delivery ON webhook_delivery_attempts (delivery_id, id);

ALTER TABLE event_outbox
  ADD CONSTRAINT event_outbox_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id);

ALTER TABLE provider_calls
  ADD CONSTRAINT provider_calls_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id),
  ADD CONSTRAINT provider_calls_job_id_fkey FOREIGN KEY (job_id) REFERENCES transcription_jobs (id);
CREATE INDEX provider_calls_spend ON provider_calls (workspace_id, occurred_at);
CREATE INDEX provider_calls_day ON provider_calls (occurred_at);

-- The attach finds every index above already built on the history tables (matching columns)
-- and the bound already proven by the validated CHECK: no scan, no build.
DO $$
DECLARE
  b record;
BEGIN
  SELECT * INTO b FROM quire_partition_bounds;
  EXECUTE format('ALTER TABLE event_outbox ATTACH PARTITION event_outbox_history
                    FOR VALUES FROM (MINVALUE) TO (%L)', b.events);
  EXECUTE format('ALTER TABLE webhook_deliveries ATTACH PARTITION webhook_deliveries_history
                    FOR VALUES FROM (MINVALUE) TO (%L)', b.events);
  EXECUTE format('ALTER TABLE webhook_delivery_attempts ATTACH PARTITION webhook_delivery_attempts_history
                    FOR VALUES FROM (MINVALUE) TO (%L)', b.events);
  EXECUTE format('ALTER TABLE provider_calls ATTACH PARTITION provider_calls_history
                    FOR VALUES FROM (MINVALUE) TO (%L)', b.calls);
  -- The rest of this month and the next: the maintenance pass keeps months ahead from here.
  PERFORM quire_add_time_partition(t.tab, t.from_at, quire_next_month(t.from_at))
     FROM (VALUES ('event_outbox', b.events), ('webhook_deliveries', b.events),
                  ('webhook_delivery_attempts', b.events), ('provider_calls', b.calls)) AS t(tab, from_at);
  PERFORM quire_add_time_partition(t.tab, quire_next_month(t.from_at), quire_next_month(quire_next_month(t.from_at)))
     FROM (VALUES ('event_outbox', b.events), ('webhook_deliveries', b.events),
                  ('webhook_delivery_attempts', b.events), ('provider_calls', b.calls)) AS t(tab, from_at);
END $$;

ALTER TABLE event_outbox_history DROP CONSTRAINT event_outbox_history_bound;
ALTER TABLE webhook_deliveries_history DROP CONSTRAINT webhook_deliveries_history_bound;
ALTER TABLE webhook_delivery_attempts_history DROP CONSTRAINT webhook_delivery_attempts_history_bound;
ALTER TABLE provider_calls_history DROP CONSTRAINT provider_calls_history_bound;
-- Unused once their twins above were attached in their place.
DROP INDEX event_outbox_history_position;

COMMENT ON COLUMN event_outbox.position IS
  'D10: place in commit order, stamped after commit by quire_sequence_events; the stream cursor';
COMMENT ON COLUMN webhook_deliveries.event_created_at IS
  'D11: its event''s created_at, the partition key it shares with the event and its attempts';
COMMENT ON COLUMN webhook_delivery_attempts.event_created_at IS
  'D11: its delivery''s event''s created_at, the partition key it shares with them';

-- The sequencer (0090) finds each row it stamps by its id and its time, so the stamping
-- UPDATE probes only the month that holds the row (run-time pruning), not every month's index.
CREATE OR REPLACE FUNCTION quire_sequence_events(max_rows integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  base    bigint;
  stamped integer;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM event_outbox WHERE position IS NULL) THEN
    RETURN 0;
  END IF;
  SELECT last_position INTO base FROM event_outbox_sequence FOR UPDATE;
  -- A new statement, so a new snapshot: it sees what the sequencer waited for has stamped.
  WITH batch AS (
    SELECT id, created_at, row_number() OVER (ORDER BY id) AS n
      FROM (SELECT id, created_at FROM event_outbox WHERE position IS NULL ORDER BY id LIMIT max_rows) p
  )
  UPDATE event_outbox e SET position = base + batch.n
    FROM batch WHERE e.id = batch.id AND e.created_at = batch.created_at;
  GET DIAGNOSTICS stamped = ROW_COUNT;
  IF stamped > 0 THEN
    UPDATE event_outbox_sequence SET last_position = base + stamped;
    PERFORM pg_notify('quire_events', (base + stamped)::text);
  END IF;
  RETURN stamped;
END $$;
