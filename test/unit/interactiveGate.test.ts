import { describe, expect, it } from 'vitest';
import { InteractiveGate } from '../../activities/interactiveGate';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a worker makes way for a person’s page (P8)', () => {
  it('P8 a bulk step waits while a person’s step runs and for the linger after it, then goes', async () => {
    const gate = new InteractiveGate(100, 5_000);
    let release!: () => void;
    const person = gate.holding(
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
    );
    expect(gate.closed()).toBe(true);
    let waits = 0;
    const bulk = gate.cleared(new AbortController().signal, () => {
      waits += 1;
    });
    await sleep(200);
    expect(waits).toBeGreaterThan(1);
    const releasedAt = Date.now();
    release();
    await person;
    const waited = await bulk;
    expect(Date.now() - releasedAt).toBeGreaterThanOrEqual(90);
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(gate.closed()).toBe(false);
  });

  it('P8 the wait is bounded: a bulk step goes after maxWaitMs even while people keep working', async () => {
    const gate = new InteractiveGate(100, 150);
    const person = gate.holding(() => sleep(1_000));
    const waited = await gate.cleared(new AbortController().signal, () => {});
    expect(waited).toBeGreaterThanOrEqual(140);
    expect(waited).toBeLessThan(900);
    expect(gate.closed()).toBe(true);
    await person;
  });

  it('P8 with no person’s step here, a bulk step does not wait; a cancelled one stops waiting', async () => {
    const gate = new InteractiveGate(100, 5_000);
    expect(await gate.cleared(new AbortController().signal, () => {})).toBeLessThan(20);
    const person = gate.holding(() => sleep(600));
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 50);
    expect(await gate.cleared(abort.signal, () => {})).toBeLessThan(400);
    await person;
  });

  it('P8 a person’s failing step still opens the gate', async () => {
    const gate = new InteractiveGate(0, 5_000);
    await expect(gate.holding(() => Promise.reject(new Error('engine failed')))).rejects.toThrow(
      'engine failed',
    );
    expect(gate.closed(Date.now() + 1)).toBe(false);
  });
});
