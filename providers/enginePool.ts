/**
 * P2: a fixed number of engine slots per process (`QUIRE_ENGINE_THREADS`, default one per
 * core). Calls beyond it wait their turn in order; a call whose signal aborts while waiting
 * leaves the queue without taking a slot. The counts are for tests and health figures.
 *
 * P8: a person's page (`first`) waits ahead of every bulk call, behind other people's. With
 * `roomForPeople` (engines whose bulk processes run niced: the engine launcher's
 * BULK_NICENESS), it does not wait for a bulk call's slot at all: up to `size` people's calls
 * run at once on slots of their own, over the bulk calls already running, and the kernel gives
 * the person's engine the core. Each counts against the bulk calls' slots while it runs, so no
 * waiting bulk call starts until the process is back under `size` with it: room is kept for
 * the person instead of the page sharing the cores with the next bulk pages as well.
 */
export interface EnginePoolStats {
  size: number;
  busy: number;
  waiting: number;
  /** Of the busy slots, those of people's calls (P8). */
  people: number;
  /** The most slots ever busy at once. */
  peakBusy: number;
}

export class EnginePool {
  /** Calls running, people's included. */
  private busy = 0;
  /** People's calls running (P8). */
  private busyFirst = 0;
  private peakBusy = 0;
  private closed = false;
  private readonly waiting: Array<{
    first: boolean;
    start: () => void;
    fail: (error: unknown) => void;
  }> = [];

  constructor(
    readonly size: number,
    private readonly options: { roomForPeople?: boolean } = {},
  ) {
    if (!Number.isInteger(size) || size < 1) throw new Error('engine pool size must be >= 1');
  }

  stats(): EnginePoolStats {
    return {
      size: this.size,
      busy: this.busy,
      waiting: this.waiting.length,
      people: this.busyFirst,
      peakBusy: this.peakBusy,
    };
  }

  /** Runs `work` in a slot, after the calls queued before it (`first`: before bulk calls). */
  async run<T>(
    signal: AbortSignal | undefined,
    work: () => Promise<T>,
    options: { first?: boolean } = {},
  ): Promise<T> {
    const first = options.first ?? false;
    await this.acquire(signal, first);
    try {
      return await work();
    } finally {
      this.release(first);
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
    if (this.canStart(first)) {
      this.take(first);
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
          this.take(first);
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

  /** With room for people, a person's call needs one of their own slots; else one under `size`. */
  private canStart(first: boolean): boolean {
    if (first && this.options.roomForPeople) return this.busyFirst < this.size;
    return this.busy < this.size;
  }

  private take(first: boolean): void {
    this.busy += 1;
    if (first) this.busyFirst += 1;
    this.peakBusy = Math.max(this.peakBusy, this.busy);
  }

  /** Starts the waiting calls that may start now, in their order (people's ahead). */
  private release(first: boolean): void {
    this.busy -= 1;
    if (first) this.busyFirst -= 1;
    while (this.waiting.length > 0 && this.canStart(this.waiting[0]!.first)) {
      this.waiting.shift()!.start();
    }
  }
}
