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
  private readonly listeners: Array<() => void> = [];

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
    if (this.held.delete(jobId)) for (const listener of this.listeners) listener();
  }

  /**
   * How many pages are in hand, stale entries dropped. A poll the bound holds back is checked
   * again at the next release, the next freed slot or the end of its own bounded wait.
   */
  get size(): number {
    const now = this.clock();
    for (const [jobId, at] of this.held) if (now - at > this.staleMs) this.held.delete(jobId);
    return this.held.size;
  }

  /** Calls `listener` whenever a page leaves. */
  onRelease(listener: () => void): void {
    this.listeners.push(listener);
  }
}
