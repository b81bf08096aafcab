-- D10: no installation-wide lock on the commit path. Writers insert outbox rows freely (no
-- advisory lock, no NOTIFY inside their transaction); a row's `id` is its identity (the
-- CloudEvent id, the webhook-id) in the order ids were drawn, which is not commit order.
-- Readers follow `position` instead: a gap-free number stamped after commit by the sequencer
-- below, in the order rows are found committed. Stamping batches are serialised by one row
-- lock that no writer takes, and each batch commits before the next starts, so a reader
-- following `position > cursor` never skips a row: a transaction that commits late is simply
-- stamped later, with a higher position.

ALTER TABLE event_outbox ADD COLUMN position bigint;
-- Every row so far was ordered by the old lock: its id was already its place in commit order,
-- so stream cursors (Last-Event-ID) and relay cursors held by clients stay valid.
UPDATE event_outbox SET position = id;
CREATE UNIQUE INDEX event_outbox_position ON event_outbox (position);
CREATE INDEX event_outbox_workspace_position ON event_outbox (workspace_id, position);
DROP INDEX event_outbox_workspace;
-- The rows the sequencer has yet to stamp: few at any time, so this index stays tiny.
CREATE INDEX event_outbox_unsequenced ON event_outbox (id) WHERE position IS NULL;

CREATE TABLE event_outbox_sequence (
  singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  last_position bigint NOT NULL
);
-- New positions start above every id ever handed out (even one whose row retention has
-- removed since), so they continue after any Last-Event-ID a client already holds.
INSERT INTO event_outbox_sequence (last_position)
  SELECT greatest(
    (SELECT coalesce(max(id), 0) FROM event_outbox),
    coalesce(pg_sequence_last_value(pg_get_serial_sequence('event_outbox', 'id')::regclass), 0));

-- The old per-row NOTIFY ran inside the writer's commit, and NOTIFY takes one lock for the
-- whole database at commit: writers now wake readers after their commit (db/events.ts).
DROP TRIGGER event_outbox_notify ON event_outbox;
DROP FUNCTION quire_event_notify();

-- Stamps up to `max_rows` committed, unstamped rows in id order and returns how many. Waits
-- for a sequencer already at work, so when it returns every row committed before the call is
-- stamped. Notifies `quire_events` with the new last position when it stamped anything: the
-- notification leaves with the sequencer's own commit, off the writers' path.
CREATE FUNCTION quire_sequence_events(max_rows integer) RETURNS integer LANGUAGE plpgsql AS $$
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
    SELECT id, row_number() OVER (ORDER BY id) AS n
      FROM (SELECT id FROM event_outbox WHERE position IS NULL ORDER BY id LIMIT max_rows) p
  )
  UPDATE event_outbox e SET position = base + batch.n FROM batch WHERE e.id = batch.id;
  GET DIAGNOSTICS stamped = ROW_COUNT;
  IF stamped > 0 THEN
    UPDATE event_outbox_sequence SET last_position = base + stamped;
    PERFORM pg_notify('quire_events', (base + stamped)::text);
  END IF;
  RETURN stamped;
END $$;

COMMENT ON COLUMN event_outbox.position IS
  'D10: place in commit order, stamped after commit by quire_sequence_events; the stream cursor';
COMMENT ON COLUMN relay_cursors.last_event_id IS 'the last outbox position fanned out (D10)';
COMMENT ON COLUMN webhook_subscriptions.after_event_id IS
  'the last outbox position stamped when the subscription was created (D10)';
