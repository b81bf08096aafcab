/**
 * P8: a worker process makes way for a person's page. On a busy machine the page's own task
 * queue and slots are not enough: its steps share the cores with every bulk step the process
 * runs, and with the Temporal and PostgreSQL work those steps cause. So while a step of a page
 * a person waits for runs here, and for `lingerMs` after it (the workflow tasks between two of
 * that page's steps), a bulk step about to start (a claim, an engine step) waits, an engine
 * step heartbeating, for at most `maxWaitMs`. Steps already running are not touched, and the
 * wait is bounded: bulk work slows while people wait and always moves on.
 */
export class InteractiveGate {
  private running = 0;
  private closedUntil = 0;

  constructor(
    readonly lingerMs = 1_000,
    readonly maxWaitMs = 2_000,
  ) {}

  /** Whether a person's step runs here, or ran less than `lingerMs` ago. */
  closed(now = Date.now()): boolean {
    return this.running > 0 || now < this.closedUntil;
  }

  /** Runs a person's step with the gate closed. */
  async holding<T>(work: () => Promise<T>): Promise<T> {
    this.running += 1;
    try {
      return await work();
    } finally {
      this.running -= 1;
      this.closedUntil = Math.max(this.closedUntil, Date.now() + this.lingerMs);
    }
  }

  /**
   * Resolves once no person's step runs here, after `maxWaitMs` at most, or at once when the
   * signal aborts; `onWait` is called every check while it waits (the step's heartbeat).
   * Returns how long it waited.
   */
  async cleared(signal: AbortSignal, onWait: () => void): Promise<number> {
    const start = Date.now();
    const deadline = start + this.maxWaitMs;
    for (let now = start; this.closed(now) && now < deadline && !signal.aborted; now = Date.now()) {
      onWait();
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, deadline - now)));
    }
    return Date.now() - start;
  }
}
