import { backoffCeilingMs } from '../core/backoff';
import type { BlobStore } from './store';
import { BlobStoreUnavailableError } from './store';

/**
 * An engine's file for `key`, waiting out an object store that does not answer (D3): the
 * job waits and resumes instead of spending its attempts on an outage. `onWait` runs about
 * every second while waiting (an activity heartbeats there, so its lease holds); past
 * `maxWaitMs` or once `signal` aborts, the last error is thrown.
 */
export async function localPathWhenAvailable(
  store: BlobStore,
  key: string,
  options: { onWait: () => void; signal?: AbortSignal; maxWaitMs?: number },
): Promise<string> {
  const deadline = Date.now() + (options.maxWaitMs ?? 10 * 60_000);
  for (let step = 0; ; step += 1) {
    try {
      return await store.localPath(key);
    } catch (error) {
      if (!(error instanceof BlobStoreUnavailableError)) throw error;
      if (Date.now() > deadline || options.signal?.aborted) throw error;
    }
    options.onWait();
    await new Promise((resolve) => setTimeout(resolve, backoffCeilingMs(step, 250, 1_000)));
  }
}
