/**
 * M5: the pages a worker process holds an attempt for, from its claim to the step that ends
 * the attempt (commit, close, pause, cancel). The process's bulk worker takes a new page only
 * while it holds fewer than its bound (`worker/workflowTaskSlots.ts`): a page's later workflow
 * tasks wait in the worker's sticky queue, which Temporal serves first come, first served with
 * no fairness, so every page a flooding workspace has in hand there is one more task ahead of
 * a small workspace's next one.
 *
 * An attempt that ends where this process does not see it (its workflow moved to another
 * worker, a step failed before its close) would stay counted; an entry no step of this process
 * has touched for `staleMs` no longer counts, so a lost release only narrows the bound for a
 * while.
 */
export class PagesInHand {
  private readonly held = new Map<string, number>();
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly staleMs = 60_000,
    private readonly clock: () => number = Date.now,
  ) {}

  /** A claimed attempt: the page is in hand. */
  take(jobId: string): void {
    this.held.set(jobId, this.clock());
  }

  /** A step of the page ran here: it is still in hand. */
  touch(jobId: string): void {
    if (this.held.has(jobId)) this.held.set(jobId, this.clock());
  }

  /** The attempt ended: the page leaves the worker's hand. */
  release(jobId: string): void {
    if (this.held.delete(jobId)) this.changed();
  }

  /** How many pages are in hand, stale entries dropped. */
  get size(): number {
    const now = this.clock();
    let dropped = false;
    for (const [jobId, at] of this.held) {
      if (now - at > this.staleMs) {
        this.held.delete(jobId);
        dropped = true;
      }
    }
    if (dropped) queueMicrotask(() => this.changed());
    return this.held.size;
  }

  /** Calls `listener` whenever a page leaves; returns the unsubscribe. */
  onRelease(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}
