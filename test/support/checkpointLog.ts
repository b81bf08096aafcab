import type { Queryable } from '../../db/pool';

/**
 * D11 removes a job's checkpoints in the transaction that ends it. A test that proves what
 * an attempt saved on the way (which stages, which attempt, in which transaction) reads this
 * log instead: a copy of every checkpoint row as it was inserted, kept after the job ends.
 * Installed in the test's own database; the rows read like `job_checkpoints`.
 */
export const CHECKPOINT_LOG = 'test_checkpoint_log';

export async function logCheckpointWrites(db: Queryable): Promise<void> {
  await db.query(`
    CREATE TABLE IF NOT EXISTS ${CHECKPOINT_LOG} (LIKE job_checkpoints);
    CREATE OR REPLACE FUNCTION test_log_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${CHECKPOINT_LOG} SELECT NEW.*;
      RETURN NULL;
    END $$;
    DROP TRIGGER IF EXISTS test_log_checkpoint ON job_checkpoints;
    CREATE TRIGGER test_log_checkpoint AFTER INSERT ON job_checkpoints
      FOR EACH ROW EXECUTE FUNCTION test_log_checkpoint();`);
}
