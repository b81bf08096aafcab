/**
 * The ceiling of the one backoff: `baseMs` doubled `step` times, never above `maxMs`. Alone,
 * it is the exact schedule of waits that keep one (a provider's outage pause of 1, 2, 4 ...
 * 60 minutes, a listener's reconnect, the webhook relay's next pass after a failed one, a
 * wait for the object store, the workflow's pause before a step that met a fleet key fault
 * runs again); `cappedBackoffMs` jitters below it. Steps below 0 count as 0.
 */
export function backoffCeilingMs(
  /** 0 for the first retry; each step doubles the ceiling. */
  step: number,
  baseMs: number,
  maxMs: number,
): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(step, 0), 30));
}

/**
 * The one backoff of Quire: capped exponential growth with jitter on the upper half, so
 * retries of many jobs, deliveries or cleanups that failed together do not return together.
 * Pure: the workflow calls it with the sandbox's deterministic `Math.random`.
 */
export function cappedBackoffMs(
  /** 0 for the first retry; each step doubles the ceiling. */
  step: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = backoffCeilingMs(step, baseMs, maxMs);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
