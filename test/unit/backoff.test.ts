import { afterEach, describe, expect, it, vi } from 'vitest';
import { localPathWhenAvailable } from '../../blobs/available';
import { type BlobStore, BlobStoreUnavailableError } from '../../blobs/store';
import { backoffCeilingMs, cappedBackoffMs } from '../../core/backoff';
import { createNotificationListener } from '../../db/listener';

describe('the one backoff', () => {
  it('J2 the ceiling doubles from the base each step and stops at the cap', () => {
    const steps = Array.from({ length: 8 }, (_, step) => backoffCeilingMs(step, 100, 5_000));
    expect(steps).toEqual([100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000]);
    expect(backoffCeilingMs(-3, 100, 5_000)).toBe(100);
    expect(backoffCeilingMs(10_000, 100, 5_000)).toBe(5_000);
  });

  it('J2 the jittered backoff lies in the upper half of its ceiling, at both ends of the draw', () => {
    for (const [step, base, max] of [
      [0, 1_000, 60_000],
      [3, 1_000, 60_000],
      [12, 1_000, 60_000],
      [2, 30_000, 3_600_000],
    ] as const) {
      const ceiling = backoffCeilingMs(step, base, max);
      expect(cappedBackoffMs(step, base, max, () => 0)).toBe(ceiling / 2);
      expect(cappedBackoffMs(step, base, max, () => 0.999_999)).toBe(ceiling);
      for (let i = 0; i < 50; i += 1) {
        const ms = cappedBackoffMs(step, base, max);
        expect(ms).toBeGreaterThanOrEqual(ceiling / 2);
        expect(ms).toBeLessThanOrEqual(ceiling);
      }
    }
  });

  it('Q3 an outage pause lasts 1, 2, 4 ... 60 minutes', () => {
    const minutes = Array.from(
      { length: 9 },
      (_, step) => backoffCeilingMs(step, 60_000, 60 * 60_000) / 60_000,
    );
    expect(minutes).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60]);
  });
});

describe('waits built on the one backoff', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('D3 a wait for the object store retries after 250 ms, 500 ms, then every second', async () => {
    vi.useFakeTimers();
    let calls = 0;
    const store = {
      localPath: async () => {
        calls += 1;
        if (calls <= 4) throw new BlobStoreUnavailableError();
        return '/blobs/k';
      },
    } as unknown as BlobStore;
    const waits: number[] = [];
    const start = Date.now();
    const found = localPathWhenAvailable(store, 'k', {
      onWait: () => waits.push(Date.now() - start),
    });
    // Each try is due at the sum of the waits before it; one millisecond short, it has not run.
    for (const due of [250, 750, 1_750, 2_750]) {
      await vi.advanceTimersByTimeAsync(due - 1 - (Date.now() - start));
      const before = calls;
      await vi.advanceTimersByTimeAsync(1);
      expect(calls).toBe(before + 1);
    }
    await expect(found).resolves.toBe('/blobs/k');
    expect(waits).toEqual([0, 250, 750, 1_750]);
  });

  it('D7 a wait for the object store keeps beating while a call is held by a store that stopped answering', async () => {
    vi.useFakeTimers();
    let calls = 0;
    const store = {
      // The first call is held 5 s (a silent socket, until its bound), then fails as an outage.
      localPath: async () => {
        calls += 1;
        if (calls === 1) {
          await new Promise((resolve) => setTimeout(resolve, 5_000));
          throw new BlobStoreUnavailableError();
        }
        return '/blobs/k';
      },
    } as unknown as BlobStore;
    const beats: number[] = [];
    const start = Date.now();
    const found = localPathWhenAvailable(store, 'k', {
      onWait: () => beats.push(Date.now() - start),
      beatEveryMs: 1_000,
    });
    await vi.advanceTimersByTimeAsync(5_250);
    await expect(found).resolves.toBe('/blobs/k');
    // Every second while the call was held, once before the try again, none after the path.
    expect(beats).toEqual([1_000, 2_000, 3_000, 4_000, 5_000, 5_000]);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(beats).toHaveLength(6);
  });

  it('W2 a listener that cannot connect retries after its base delay, doubling each time', async () => {
    const delays: number[] = [];
    let sixth: () => void = () => {};
    const sixLost = new Promise<void>((resolve) => {
      sixth = resolve;
    });
    // Nothing listens on port 1: every connection is refused at once.
    const listener = createNotificationListener({
      connection: { host: '127.0.0.1', port: 1, connectionTimeoutMillis: 2_000 },
      channels: ['quire_test'],
      onNotify: () => {},
      onLost: (_reason, retryInMs) => {
        delays.push(retryInMs);
        if (delays.length === 6) sixth();
      },
      reconnectMs: 5,
    });
    await listener.start();
    await sixLost;
    await listener.stop();
    expect(delays.slice(0, 6)).toEqual([5, 10, 20, 40, 80, 160]);
    expect(listener.listening).toBe(false);
  });
});
