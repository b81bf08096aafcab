import pg from 'pg';
import { isQueryTimeout } from '../core/failures';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that runs a query: the pool, or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

// bigint columns (ids, sizes) come back as numbers; Quire's ids stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/** D7: bounds on every call to PostgreSQL (core/config.ts `QUIRE_DB_*`). */
export interface PoolTimeouts {
  connectMs: number;
  queryMs: number;
  keepAliveMs: number;
}

export const DEFAULT_POOL_TIMEOUTS: PoolTimeouts = {
  connectMs: 10_000,
  queryMs: 60_000,
  keepAliveMs: 10_000,
};

/** The pool's bounds from the validated settings. */
export function poolTimeoutsFrom(config: {
  QUIRE_DB_CONNECT_TIMEOUT_MS: number;
  QUIRE_DB_QUERY_TIMEOUT_MS: number;
  QUIRE_DB_KEEPALIVE_MS: number;
}): PoolTimeouts {
  return {
    connectMs: config.QUIRE_DB_CONNECT_TIMEOUT_MS,
    queryMs: config.QUIRE_DB_QUERY_TIMEOUT_MS,
    keepAliveMs: config.QUIRE_DB_KEEPALIVE_MS,
  };
}

export function createPool(
  connectionString: string,
  max = 10,
  timeouts: PoolTimeouts = DEFAULT_POOL_TIMEOUTS,
): Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    application_name: 'quire',
    // D7: a PostgreSQL that stops answering fails the call within these bounds, as an outage
    // (core/failures.ts), instead of holding the step; the server cancels a statement that
    // runs past the same bound on its side.
    connectionTimeoutMillis: timeouts.connectMs,
    query_timeout: timeouts.queryMs,
    statement_timeout: timeouts.queryMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: timeouts.keepAliveMs,
  });
  // An idle client that loses its connection (a Postgres restart) must not crash the process;
  // the pool drops it and the next query connects again.
  pool.on('error', () => {});
  return pool;
}

/** Work to run once a transaction has committed, by the client it ran on. */
const afterCommitHooks = new WeakMap<PoolClient, Array<(pool: Pool) => void>>();

/**
 * Runs `hook` after the transaction on `client` commits (never when it rolls back), once,
 * with the pool it ran on. For wake-ups that must not sit inside the commit: a NOTIFY in a
 * transaction takes a lock for the whole database at commit (D10). Only `withTransaction`
 * runs hooks; what a hook throws is dropped, never reported as a failed commit.
 */
export function afterCommit(client: PoolClient, hook: (pool: Pool) => void): void {
  const hooks = afterCommitHooks.get(client);
  if (hooks) {
    if (!hooks.includes(hook)) hooks.push(hook);
  } else afterCommitHooks.set(client, [hook]);
}

interface WakeState {
  sending: boolean;
  again: boolean;
}
const wakes = new WeakMap<Pool, Map<string, WakeState>>();

/**
 * Runs `notify` (a statement that NOTIFYs) on the pool as a transaction of its own, one in
 * flight per pool and statement at a time: wakes asked for meanwhile fold into the next one.
 * For hooks of `afterCommit`: the wake comes after the writers' commits, holding nothing of
 * theirs. A failed wake is dropped: every listener also polls.
 */
export function wakeListeners(pool: Pool, notify: string): void {
  let byStatement = wakes.get(pool);
  if (!byStatement) {
    byStatement = new Map();
    wakes.set(pool, byStatement);
  }
  let state = byStatement.get(notify);
  if (!state) {
    state = { sending: false, again: false };
    byStatement.set(notify, state);
  }
  if (state.sending) {
    state.again = true;
    return;
  }
  state.sending = true;
  const current = state;
  const send = (): void => {
    current.again = false;
    pool
      .query(notify)
      .catch(() => {})
      .finally(() => {
        if (current.again) send();
        else current.sending = false;
      });
  };
  send();
}

/**
 * Runs `work` in one transaction: committed when it returns, rolled back when it throws.
 * Every business fact of Quire is written through this.
 */
export async function withTransaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  // A checked-out client has no listener of the pool: a connection lost between two queries
  // (a PostgreSQL restart, D3) would be an unhandled 'error' and end the process. Kept here
  // instead, the next query fails as usual and the client is discarded, not pooled again.
  let lost: Error | undefined;
  const onError = (error: Error) => {
    lost = error;
  };
  client.on('error', onError);
  afterCommitHooks.delete(client);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    const hooks = afterCommitHooks.get(client);
    afterCommitHooks.delete(client);
    for (const hook of hooks ?? []) {
      try {
        hook(pool);
      } catch {
        // Committed is committed: a wake-up that fails is made up for by readers' polling.
      }
    }
    return result;
  } catch (error) {
    // D7: after a statement timed out the connection may still wait for its answer: it is
    // discarded (the server ends the transaction with it), not rolled back over.
    if (isQueryTimeout(error)) lost ??= error as Error;
    else await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    afterCommitHooks.delete(client);
    client.off('error', onError);
    client.release(lost);
  }
}

/**
 * Runs `work` inside the caller's transaction under a savepoint: when it throws, its writes
 * alone are undone and the error is returned, so the transaction keeps what came before
 * (paid work is not lost with a later step). A connection lost meanwhile cannot roll back to
 * the savepoint: that error is thrown, and the whole transaction with it.
 */
export async function underSavepoint<T>(
  client: PoolClient,
  work: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  await client.query('SAVEPOINT quire_step');
  try {
    // Not released: the transaction's commit ends it, one round trip fewer.
    return { ok: true, value: await work() };
  } catch (error) {
    await client.query('ROLLBACK TO SAVEPOINT quire_step').catch(() => {
      throw error;
    });
    return { ok: false, error };
  }
}

/** One round trip: the database answers (readiness and worker health). */
export async function pingDatabase(db: Queryable): Promise<void> {
  await db.query('SELECT 1');
}
