/** Polling waits shared by the tests: no test sleeps for a fixed time and hopes. */
import type { WorkflowHandle } from '@temporalio/client';
import type { Pool } from '../../db/pool';

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
}

/** Polls until `check` holds, or fails after `timeoutMs`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  everyMs = 50,
): Promise<void> {
  await eventually(async () => ((await check()) ? true : undefined), timeoutMs, everyMs);
}

/**
 * Waits until a workflow has handled the last `signal` it was sent and gone back to waiting
 * on a timer: the observable that the wake-up was taken in and changed nothing. A workflow
 * that went on instead schedules work, not a timer, and this times out.
 */
export async function untilWaitingAgainAfter(
  handle: WorkflowHandle,
  signal: string,
  timeoutMs = 30_000,
): Promise<void> {
  await waitUntil(
    async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      let signalled = -1;
      events.forEach((e, i) => {
        if (e.workflowExecutionSignaledEventAttributes?.signalName === signal) signalled = i;
      });
      return (
        signalled >= 0 && events.slice(signalled + 1).some((e) => e.timerStartedEventAttributes)
      );
    },
    timeoutMs,
    100,
  );
}

/**
 * Waits until some session of this database is blocked waiting for a lock: the observable
 * that a transaction has reached the lock it must wait on, before a test asserts that it has
 * not got past it.
 */
export async function untilBlockedOnLock(pool: Pool, timeoutMs = 10_000): Promise<void> {
  await waitUntil(
    async () => {
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return (rows[0]?.n ?? 0) > 0;
    },
    timeoutMs,
    20,
  );
}
