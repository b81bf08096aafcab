-- D14: under the installation's pace (QUIRE_FLEET_MAX_OPEN_WORKFLOWS) a job that ends frees a
-- slot for every workspace, not only its own: the dispatcher is woken while any job waits
-- anywhere. The payload stays the ended job's workspace; a pass admits for every workspace
-- with waiting jobs, the longest waiting first. The index on waiting jobs answers the
-- EXISTS at once whatever the count (the notification is only a hint; the dispatcher polls).
CREATE OR REPLACE FUNCTION quire_job_slot_freed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM transcription_jobs WHERE awaiting_slot AND status = 'pending') THEN
    PERFORM pg_notify('quire_job_slots', NEW.workspace_id::text);
  END IF;
  RETURN NEW;
END $$;
