/**
 * W2 retry schedule. Attempt 1 goes at once; after the n-th failure the next attempt waits
 * `delaysMs[n]` (5 s, 5 min, 30 min, 2 h, 5 h, 10 h), then every 10 h, until the delivery is
 * older than 3 days: then it is dead. A Retry-After on 429/503 is a floor, never a reason to
 * come back sooner than the schedule says.
 */
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export interface RetrySchedule {
  /** delaysMs[0] is the first attempt (0 = at once); delaysMs[n] follows the n-th failure. */
  delaysMs: readonly number[];
  /** The delay once `delaysMs` is used up. */
  repeatEveryMs: number;
  /** No attempt is scheduled later than `createdAt + maxAgeMs`. */
  maxAgeMs: number;
}

export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = {
  delaysMs: [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR],
  repeatEveryMs: 10 * HOUR,
  maxAgeMs: 3 * 24 * HOUR,
};

/** The scheduled wait after `attemptCount` attempts have been made (no Retry-After). */
export function retryDelayMs(
  attemptCount: number,
  schedule: RetrySchedule = DEFAULT_RETRY_SCHEDULE,
): number {
  if (!Number.isInteger(attemptCount) || attemptCount < 0) {
    throw new RangeError('attemptCount must be a non-negative integer');
  }
  return schedule.delaysMs[attemptCount] ?? schedule.repeatEveryMs;
}

/**
 * When the next attempt is due after `attemptCount` attempts (0 = none yet), or 'dead' when
 * that would fall beyond the schedule's window measured from `createdAt`.
 */
export function nextAttemptAt(
  attemptCount: number,
  createdAt: Date,
  now: Date,
  retryAfterMs?: number,
  schedule: RetrySchedule = DEFAULT_RETRY_SCHEDULE,
): Date | 'dead' {
  let delay = retryDelayMs(attemptCount, schedule);
  if (retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs > delay) {
    delay = retryAfterMs;
  }
  const next = now.getTime() + delay;
  if (next > createdAt.getTime() + schedule.maxAgeMs) return 'dead';
  return new Date(next);
}

/**
 * Parses a Retry-After header (delta seconds or an HTTP date) into milliseconds from `nowMs`;
 * undefined when absent or unreadable.
 */
export function parseRetryAfter(
  value: string | undefined | null,
  nowMs: number = Date.now(),
): number | undefined {
  if (value === undefined || value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d{1,10}$/.test(trimmed)) return Number(trimmed) * SECOND;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
