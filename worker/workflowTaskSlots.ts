import type {
  CustomSlotSupplier,
  SlotPermit,
  SlotReleaseContext,
  SlotReserveContext,
  WorkflowSlotInfo,
} from '@temporalio/worker';
import type { PagesInHand } from '../activities/pagesInHand';

/** What a permit says of its poll: from the task queue itself (`intake`) or the sticky queue. */
interface Permit extends SlotPermit {
  intake: boolean;
}

interface Waiter {
  sticky: boolean;
  /** Past `maxWaitMs`: the page bound no longer holds it back. */
  waitedOut: boolean;
  grant: (permit: Permit) => void;
}

/**
 * M5: the bulk worker's workflow task slots. A poll of the task queue itself can bring a new
 * page (its first workflow task, which claims it); a poll of the worker's sticky queue only
 * continues a page already in hand. Temporal's fairness orders the task queue, not the sticky
 * queue, so a worker that keeps taking new pages while its sticky queue has a backlog lets a
 * flooding workspace's pages in hand push a small workspace's later tasks back: behind
 * 2,000 pages, B's pages waited 6.9 s in the sticky queue against 0.5 s alone
 * (`bench/fairness`). So a poll of the task queue waits while the process holds `pageBound`
 * pages (`PagesInHand`); each page that leaves lets the next one in, which the task queue's
 * fairness picks. The wait is bounded (`maxWaitMs`): a page in hand whose next task the
 * server moved to the task queue (a sticky timeout) is never locked out.
 *
 * As the SDK's own slots do, one slot is always left for each kind of poll while the other
 * kind holds none, so neither queue goes unpolled.
 */
export class WorkflowTaskSlots implements CustomSlotSupplier<WorkflowSlotInfo> {
  readonly type = 'custom' as const;
  private sticky = 0;
  private intake = 0;
  private readonly waiters: Waiter[] = [];

  constructor(
    readonly slots: number,
    private readonly hand: PagesInHand,
    readonly pageBound: number,
    readonly maxWaitMs = 5_000,
  ) {
    hand.onRelease(() => this.pump());
  }

  async reserveSlot(ctx: SlotReserveContext, abortSignal: AbortSignal): Promise<SlotPermit> {
    const sticky = ctx.isSticky;
    return new Promise<Permit>((resolve, reject) => {
      const timer = sticky
        ? undefined
        : setTimeout(() => {
            waiter.waitedOut = true;
            this.pump();
          }, this.maxWaitMs);
      const onAbort = () => {
        clearTimeout(timer);
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        reject(abortSignal.reason);
      };
      const waiter: Waiter = {
        sticky,
        waitedOut: false,
        grant: (permit) => {
          clearTimeout(timer);
          abortSignal.removeEventListener('abort', onAbort);
          resolve(permit);
        },
      };
      if (abortSignal.aborted) return reject(abortSignal.reason);
      abortSignal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.pump();
    });
  }

  tryReserveSlot(ctx: SlotReserveContext): SlotPermit | null {
    return this.allows(ctx.isSticky, false) ? this.take(ctx.isSticky) : null;
  }

  markSlotUsed(): void {}

  releaseSlot(ctx: SlotReleaseContext<WorkflowSlotInfo>): void {
    if ((ctx.permit as Permit).intake) this.intake -= 1;
    else this.sticky -= 1;
    this.pump();
  }

  /** Slots held, sticky and intake (what the tests read). */
  held(): { sticky: number; intake: number } {
    return { sticky: this.sticky, intake: this.intake };
  }

  private allows(sticky: boolean, waitedOut: boolean): boolean {
    const free = this.slots - this.sticky - this.intake;
    if (free <= 0) return false;
    if (sticky) {
      // The last slot stays for a poll of the task queue while none runs and one may start.
      return !(free === 1 && this.intake === 0 && this.admits());
    }
    if (free === 1 && this.sticky === 0 && this.slots > 1) return false;
    // Polls already out count as pages coming: each may bring one.
    return waitedOut || this.admits();
  }

  /** Whether a new page may come in: the pages in hand and those polls may bring, under bound. */
  private admits(): boolean {
    return this.hand.size + this.intake < this.pageBound;
  }

  private take(sticky: boolean): Permit {
    if (sticky) this.sticky += 1;
    else this.intake += 1;
    return { intake: !sticky };
  }

  /** Grants waiting polls in their order; a sticky poll passes an intake poll held back. */
  private pump(): void {
    for (let i = 0; i < this.waiters.length; ) {
      const waiter = this.waiters[i]!;
      if (this.allows(waiter.sticky, waiter.waitedOut)) {
        this.waiters.splice(i, 1);
        waiter.grant(this.take(waiter.sticky));
      } else i += 1;
    }
  }
}
