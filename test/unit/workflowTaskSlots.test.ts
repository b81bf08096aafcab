import type { SlotPermit, SlotReserveContext } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { PagesInHand } from '../../activities/pagesInHand';
import { WorkflowTaskSlots } from '../../worker/workflowTaskSlots';

const poll = (isSticky: boolean): SlotReserveContext => ({
  slotType: 'workflow',
  taskQueue: 'quire-transcription',
  workerIdentity: 'test',
  workerBuildId: '',
  isSticky,
});

/** Whether a reservation has been granted, without waiting for it. */
function tracked(reservation: Promise<SlotPermit>) {
  const state = { granted: false, permit: undefined as SlotPermit | undefined };
  reservation.then(
    (permit) => {
      state.granted = true;
      state.permit = permit;
    },
    () => {},
  );
  return state;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));
const release = (slots: WorkflowTaskSlots, permit: SlotPermit) => slots.releaseSlot({ permit });

describe("a worker's workflow task slots and the pages it has in hand (M5)", () => {
  it('M5 a poll of the task queue waits while the worker holds its page bound, and goes as soon as a page leaves', async () => {
    const hand = new PagesInHand();
    const slots = new WorkflowTaskSlots(4, hand, 2, 60_000);
    hand.take('a1');
    hand.take('a2');
    const intake = tracked(slots.reserveSlot(poll(false), new AbortController().signal));
    await settle();
    expect(intake.granted).toBe(false);
    hand.release('a1');
    await settle();
    expect(intake.granted).toBe(true);
    expect(slots.held()).toEqual({ sticky: 0, intake: 1 });
  });

  it('M5 polls already out count against the bound: each may bring a new page', async () => {
    const hand = new PagesInHand();
    const slots = new WorkflowTaskSlots(8, hand, 3, 60_000);
    hand.take('a1');
    const first = await slots.reserveSlot(poll(false), new AbortController().signal);
    await slots.reserveSlot(poll(false), new AbortController().signal);
    const third = tracked(slots.reserveSlot(poll(false), new AbortController().signal));
    await settle();
    expect(third.granted).toBe(false);
    release(slots, first);
    await settle();
    expect(third.granted).toBe(true);
  });

  it('M5 a sticky poll, which only continues pages in hand, passes a held-back poll of the task queue', async () => {
    const hand = new PagesInHand();
    const slots = new WorkflowTaskSlots(4, hand, 1, 60_000);
    hand.take('a1');
    const intake = tracked(slots.reserveSlot(poll(false), new AbortController().signal));
    const sticky = tracked(slots.reserveSlot(poll(true), new AbortController().signal));
    await settle();
    expect(intake.granted).toBe(false);
    expect(sticky.granted).toBe(true);
  });

  it('M5 the last free slot stays for a poll of the task queue while none runs, and the other way round', async () => {
    const slots = new WorkflowTaskSlots(3, new PagesInHand(), 10, 60_000);
    const signal = new AbortController().signal;
    const s1 = await slots.reserveSlot(poll(true), signal);
    await slots.reserveSlot(poll(true), signal);
    const third = tracked(slots.reserveSlot(poll(true), signal));
    await settle();
    expect(third.granted).toBe(false);
    expect(slots.tryReserveSlot(poll(true))).toBeNull();
    const intake = await slots.reserveSlot(poll(false), signal);
    expect(slots.held()).toEqual({ sticky: 2, intake: 1 });
    // With every slot held, a freed one goes to the poll that waited.
    release(slots, s1);
    await settle();
    expect(third.granted).toBe(true);

    const other = new WorkflowTaskSlots(2, new PagesInHand(), 10, 60_000);
    await other.reserveSlot(poll(false), signal);
    expect(other.tryReserveSlot(poll(false))).toBeNull();
    expect(other.tryReserveSlot(poll(true))).not.toBeNull();
    release(slots, intake);
  });

  it('M5 while the worker holds its bound, sticky polls may take every slot', async () => {
    const hand = new PagesInHand();
    hand.take('a1');
    const slots = new WorkflowTaskSlots(2, hand, 1, 60_000);
    expect(slots.tryReserveSlot(poll(true))).not.toBeNull();
    expect(slots.tryReserveSlot(poll(true))).not.toBeNull();
    expect(slots.held()).toEqual({ sticky: 2, intake: 0 });
  });

  it('M5 the wait is bounded: a poll of the task queue goes after maxWaitMs though the hand stays full', async () => {
    const hand = new PagesInHand();
    hand.take('a1');
    const slots = new WorkflowTaskSlots(4, hand, 1, 150);
    const start = Date.now();
    await slots.reserveSlot(poll(false), new AbortController().signal);
    expect(Date.now() - start).toBeGreaterThanOrEqual(140);
    expect(hand.size).toBe(1);
  });

  it('M5 an aborted reservation rejects with the abort reason and leaves its place to the next poll', async () => {
    const hand = new PagesInHand();
    hand.take('a1');
    const slots = new WorkflowTaskSlots(4, hand, 1, 60_000);
    const controller = new AbortController();
    const aborted = slots.reserveSlot(poll(false), controller.signal);
    const next = tracked(slots.reserveSlot(poll(false), new AbortController().signal));
    const reason = new Error('poll no longer needed');
    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    hand.release('a1');
    await settle();
    expect(next.granted).toBe(true);
    expect(slots.held()).toEqual({ sticky: 0, intake: 1 });
  });

  it('M5 a page no step has touched for staleMs no longer counts as in hand', () => {
    let now = 0;
    const hand = new PagesInHand(1_000, () => now);
    hand.take('a1');
    hand.take('a2');
    now = 800;
    hand.touch('a2');
    hand.touch('never-taken');
    now = 1_500;
    expect(hand.size).toBe(1);
    hand.release('a2');
    expect(hand.size).toBe(0);
  });
});
