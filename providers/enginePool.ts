/**
 * P2: a fixed number of engine slots per process (`QUIRE_ENGINE_THREADS`, default one per
 * core). Calls beyond it wait their turn in order, a person's page (P8, `first`) ahead of
 * every bulk call waiting but behind other people's; a call whose signal aborts while waiting
 * leaves the queue without taking a slot. The counts are for tests and health figures.
 */
export interface EnginePoolStats {
  size: number;
  busy: number;
  waiting: number;
  /** The most slots ever busy at once. */
  peakBusy: number;
}

export class EnginePool {
  private busy = 0;
  private peakBusy = 0;
  private closed = false;
  private readonly waiting: Array<{
    first: boolean;
    start: () => void;
    fail: (error: unknown) => void;
  }> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error('engine pool size must be >= 1');
  }

  stats(): EnginePoolStats {
    return {
      size: this.size,
      busy: this.busy,
      waiting: this.waiting.length,
      peakBusy: this.peakBusy,
    };
  }

  /** Runs `work` in a slot, after the calls queued before it (`first`: before bulk calls). */
  async run<T>(
    signal: AbortSignal | undefined,
    work: () => Promise<T>,
    options: { first?: boolean } = {},
  ): Promise<T> {
    await this.acquire(signal, options.first ?? false);
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  /** Refuses new calls and fails the waiting ones; running calls finish on their own. */
  close(reason: Error): void {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter.fail(reason);
  }

  /** Takes calls again after `close()`. */
  reopen(): void {
    this.closed = false;
  }

  private acquire(signal: AbortSignal | undefined, first: boolean): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    if (this.closed) return Promise.reject(new Error('engine pool closed'));
    if (this.busy < this.size) {
      this.take();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal?.reason ?? new Error('aborted'));
      };
      const waiter = {
        first,
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          this.take();
          resolve();
        },
        fail: (error: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const bulkAt = first ? this.waiting.findIndex((w) => !w.first) : -1;
      if (bulkAt >= 0) this.waiting.splice(bulkAt, 0, waiter);
      else this.waiting.push(waiter);
    });
  }

  private take(): void {
    this.busy += 1;
    this.peakBusy = Math.max(this.peakBusy, this.busy);
  }

  private release(): void {
    this.busy -= 1;
    const next = this.waiting.shift();
    next?.start();
  }
}
