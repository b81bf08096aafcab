import { describe, expect, it } from 'vitest';
import {
  finishedThoughTimedOut,
  RECOVERY_MS,
  RECOVERY_RERUNS,
  STEP_FINISH_WAIT_MS,
  stillRecovering,
  timeoutVerdict,
} from '../../workflows/outages';

const HEARTBEAT_MS = 3_000;
const NOW = 1_000_000;
const noOutage = { count: 0, lastAt: 0 };
const at = (over: Partial<Parameters<typeof timeoutVerdict>[1]> = {}) => ({
  calledAt: NOW - 60_000,
  now: NOW,
  heartbeatTimeoutMs: HEARTBEAT_MS,
  met: noOutage,
  ...over,
});

describe('a step cut off while its attempt comes back from an outage (D7)', () => {
  it('D7 within two minutes of an outage, up to six in a row, a timeout is the outage’s', () => {
    expect(stillRecovering({ count: 1, lastAt: NOW - 1_000 }, NOW)).toBe(true);
    expect(stillRecovering({ count: RECOVERY_RERUNS - 1, lastAt: NOW - 1_000 }, NOW)).toBe(true);
    expect(stillRecovering({ count: RECOVERY_RERUNS, lastAt: NOW - 1_000 }, NOW)).toBe(false);
    expect(stillRecovering({ count: 1, lastAt: NOW - RECOVERY_MS }, NOW)).toBe(false);
    expect(stillRecovering(noOutage, NOW)).toBe(false);
  });
});

describe('what the timing says of a step that timed out (D7, T3)', () => {
  it('T3 a dead worker’s timeout, on time after its last beat, asks the database at once', () => {
    const step = { activityId: '5', lastHeartbeatAt: NOW - HEARTBEAT_MS - 500 };
    expect(timeoutVerdict(step, at())).toEqual({ waitMs: null });
  });

  it('D7 a timeout a little late may be of a worker saving right now: the question waits for it', () => {
    const step = { activityId: '5', lastHeartbeatAt: NOW - HEARTBEAT_MS - 2_500 };
    expect(timeoutVerdict(step, at())).toEqual({ waitMs: STEP_FINISH_WAIT_MS });
  });

  it('D7 a timeout long after the last beat is the server having been away', () => {
    const step = { activityId: '5', lastHeartbeatAt: NOW - 2 * HEARTBEAT_MS - 10_001 };
    expect(timeoutVerdict(step, at())).toBe('outage');
  });

  it('D7 with no beat recorded, the time the story called the step stands for it', () => {
    const step = { activityId: '5', lastHeartbeatAt: null };
    expect(timeoutVerdict(step, at({ calledAt: NOW - 120_000 }))).toBe('outage');
    expect(timeoutVerdict(step, at({ calledAt: NOW - HEARTBEAT_MS }))).toEqual({ waitMs: null });
  });

  it('D7 an attempt still recovering from an outage takes any timeout for the outage’s', () => {
    const step = { activityId: '5', lastHeartbeatAt: NOW - HEARTBEAT_MS };
    expect(timeoutVerdict(step, at({ met: { count: 2, lastAt: NOW - 5_000 } }))).toBe('outage');
  });
});

describe('asking whether a step that timed out had finished (D7)', () => {
  const ref = { jobId: 'j', attemptNumber: 1, token: 't' } as never;

  it('D7 the database answers unless the timing already did; the wait goes with the question', async () => {
    const asked: unknown[] = [];
    const stepFinished = async (_ref: unknown, step: unknown) => {
      asked.push(step);
      return { finished: true };
    };
    const late = { activityId: '5', lastHeartbeatAt: NOW - HEARTBEAT_MS - 2_500 };
    await expect(finishedThoughTimedOut(stepFinished, ref, 'run', late, at())).resolves.toBe(true);
    const onTime = { activityId: '6', lastHeartbeatAt: NOW - HEARTBEAT_MS };
    await expect(finishedThoughTimedOut(stepFinished, ref, 'run', onTime, at())).resolves.toBe(
      true,
    );
    expect(asked).toEqual([
      { runId: 'run', activityId: '5', waitMs: STEP_FINISH_WAIT_MS },
      { runId: 'run', activityId: '6' },
    ]);
    const away = { activityId: '7', lastHeartbeatAt: NOW - 60_000 };
    await expect(finishedThoughTimedOut(stepFinished, ref, 'run', away, at())).resolves.toBe(true);
    expect(asked).toHaveLength(2);
  });
});
