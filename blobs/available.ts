import { backoffCeilingMs } from '../core/backoff';
import { isInfrastructureError } from '../core/failures';
import type { BlobStore } from './store';

/**
 * An engine's file for `key`, waiting out an object store that does not answer (D3, D7): the
 * job waits and resumes instead of spending its attempts on an outage. `onWait` runs before
 * each try again (after 250 ms, 500 ms, then every second) and, with `beatEveryMs`, that often
 * for as long as this runs, during a call to the store too: a call to a store that stopped
 * answering holds until its own bound (QUIRE_S3_SOCKET_TIMEOUT_MS, times the client's tries),
 * which may be longer than an activity's heartbeat timeout, and an activity heartbeats in
 * `onWait`, so its lease holds. Past `maxWaitMs` or once `signal` aborts, the last error is
 * thrown.
 */
export async function localPathWhenAvailable(
  store: BlobStore,
  key: string,
  options: {
    onWait: () => void;
    signal?: AbortSignal;
    maxWaitMs?: number;
    beatEveryMs?: number;
  },
): Promise<string> {
  const deadline = Date.now() + (options.maxWaitMs ?? 10 * 60_000);
  const timer =
    options.beatEveryMs === undefined
      ? undefined
      : setInterval(options.onWait, options.beatEveryMs);
  try {
    for (let step = 0; ; step += 1) {
      try {
        return await store.localPath(key);
      } catch (error) {
        // BlobStoreUnavailableError, or a connection lost under a body stream.
        if (!isInfrastructureError(error)) throw error;
        if (Date.now() > deadline || options.signal?.aborted) throw error;
      }
      options.onWait();
      await new Promise((resolve) => setTimeout(resolve, backoffCeilingMs(step, 250, 1_000)));
    }
  } finally {
    clearInterval(timer);
  }
}
