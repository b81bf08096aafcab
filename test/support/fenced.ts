import { type AttemptFence, lockRunningAttempt, type RunningAttempt } from '../../db/fence';
import { type Pool, type PoolClient, withTransaction } from '../../db/pool';

/**
 * A fenced write as an activity composes it: a transaction of its own that locks the running
 * attempt (A1; a stale fence throws `StaleAttemptError`), then calls the db/ writers in it.
 */
export function fenced<T>(
  pool: Pool,
  fence: AttemptFence,
  write: (client: PoolClient, attempt: RunningAttempt) => Promise<T>,
  mode: 'SHARE' | 'UPDATE' = 'UPDATE',
): Promise<T> {
  return withTransaction(pool, async (client) =>
    write(client, await lockRunningAttempt(client, fence, mode)),
  );
}
