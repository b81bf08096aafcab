import { removeCheckpoints } from './checkpoints';
import { afterCommit, type Pool, type PoolClient, wakeListeners } from './pool';

/** The channel a freed slot or a raised cap is announced on (M4; the payload is empty). */
export const JOB_SLOTS_CHANNEL = 'quire_job_slots';

/**
 * What every transaction that ends jobs (completed, failed, canceled, superseded) does beside
 * writing their status: their checkpoints go (D11), and once it has committed the slot
 * dispatchers are woken when jobs wait for a slot (M4). Called after the status is written.
 */
export async function jobsEnded(client: PoolClient, jobIds: readonly string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await removeCheckpoints(client, jobIds);
  afterCommit(client, wakeSlotDispatchers);
}

/**
 * Wakes the slot dispatchers when any job of the installation waits for a slot, as a
 * statement of its own after the commit that freed a slot or raised a cap (D10: a NOTIFY
 * inside a job's ending commit would take PostgreSQL's one notification lock at every such
 * commit). The dispatcher passes over every waiting workspace, so the wake names none; it
 * also polls, so a lost wake costs latency, never a job.
 */
export function wakeSlotDispatchers(pool: Pool): void {
  wakeListeners(
    pool,
    `SELECT pg_notify('${JOB_SLOTS_CHANNEL}', '')
      WHERE EXISTS (SELECT 1 FROM transcription_jobs WHERE awaiting_slot AND status = 'pending')`,
  );
}
