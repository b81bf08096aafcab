/**
 * Waits `ms`, or rejects as soon as `signal` aborts (an activity cancelled, a worker draining),
 * so a waiting poll or a simulated latency never outlives its call. The rejection is the
 * signal's reason unless the caller names its own error.
 */
export function sleepUnlessAborted(
  ms: number,
  signal: AbortSignal,
  abortError: () => unknown = () => signal.reason,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortError());
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
