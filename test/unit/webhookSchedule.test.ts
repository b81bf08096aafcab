import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_SCHEDULE, nextAttemptAt, parseRetryAfter } from '../../core/webhookSchedule';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const created = new Date('2025-01-01T00:00:00Z');

describe('W2 retry schedule', () => {
  it('W2 goes now, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then every 10 h', () => {
    const expected = [0, 5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 10 * H, 10 * H];
    expected.forEach((delay, attempts) => {
      const next = nextAttemptAt(attempts, created, created);
      expect(next).toEqual(new Date(created.getTime() + delay));
    });
  });

  it('W2 stops at 3 days: the attempt that would land later is dead', () => {
    let now = created;
    let attempts = 0;
    const times: number[] = [];
    for (;;) {
      const next = nextAttemptAt(attempts, created, now);
      if (next === 'dead') break;
      times.push(next.getTime() - created.getTime());
      now = next;
      attempts += 1;
    }
    expect(times.at(-1)).toBeLessThanOrEqual(3 * 24 * H);
    expect(times.at(-1)! + 10 * H).toBeGreaterThan(3 * 24 * H);
    expect(attempts).toBe(12);
    expect(nextAttemptAt(1, created, new Date(created.getTime() + 3 * 24 * H))).toBe('dead');
  });

  it('W2 Retry-After is a floor over the scheduled delay', () => {
    expect(nextAttemptAt(1, created, created, 60 * S)).toEqual(
      new Date(created.getTime() + 60 * S),
    );
    expect(nextAttemptAt(2, created, created, 60 * S)).toEqual(new Date(created.getTime() + 5 * M));
    expect(nextAttemptAt(1, created, created, 4 * 24 * H)).toBe('dead');
  });

  it('W2 reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120 * S);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:01:00 GMT', now)).toBe(60 * S);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('W2 the default schedule is the documented one', () => {
    expect(DEFAULT_RETRY_SCHEDULE.maxAgeMs).toBe(72 * H);
    expect(DEFAULT_RETRY_SCHEDULE.repeatEveryMs).toBe(10 * H);
  });
});
