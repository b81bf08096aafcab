-- D10, M4: a job's ending commit no longer notifies from inside its transaction. The trigger
-- of migration 0006 sent `quire_job_slots` at every job end whose workspace had jobs waiting,
-- and a NOTIFY takes PostgreSQL's one notification lock at commit, so those commits queued
-- one behind another. The slot dispatchers are now woken after the commit, by the process
-- that ended the job (db/jobEnds.ts); they still poll, so a lost wake costs latency only.
DROP TRIGGER transcription_jobs_slot_freed ON transcription_jobs;
DROP FUNCTION quire_job_slot_freed();
