import {
  ActivityFailure,
  ApplicationFailure,
  RetryState,
  TimeoutFailure,
  TimeoutType,
} from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  CONFIG_MISMATCH,
  INFRASTRUCTURE_FAULT,
  KEY_MISMATCH,
  STALE_ATTEMPT,
} from '../../core/failures';
import {
  attemptCategory,
  classifyStepFailure,
  failureType,
  isKeyFault,
  isRerun,
  pauseOf,
} from '../../workflows/failureClassification';

/** An activity's failure as Temporal hands it to the workflow: wrapped in an ActivityFailure. */
function fromActivity(cause: Error, retryState: RetryState = RetryState.NON_RETRYABLE_FAILURE) {
  return new ActivityFailure('activity failed', 'recognizeSegments', '7', retryState, 'w', cause);
}

const applicationFailure = (type: string, details?: unknown[]) =>
  ApplicationFailure.create({ type, message: `${type} failed`, nonRetryable: true, details });

describe('how the workflow reads a failed step (Q3)', () => {
  it('Q3 an activity failure wrapping an application failure reads as its type', () => {
    expect(failureType(fromActivity(applicationFailure('outage')))).toBe('outage');
    expect(failureType(fromActivity(applicationFailure(STALE_ATTEMPT)))).toBe(STALE_ATTEMPT);
  });

  it('D1 a bare application failure (a local activity failing while its worker shuts down) reads the same', () => {
    expect(failureType(applicationFailure(KEY_MISMATCH))).toBe(KEY_MISMATCH);
    expect(isKeyFault(applicationFailure(KEY_MISMATCH))).toBe(true);
    expect(isKeyFault(fromActivity(applicationFailure(KEY_MISMATCH)))).toBe(true);
    expect(isKeyFault(fromActivity(applicationFailure(STALE_ATTEMPT)))).toBe(false);
  });

  it('T3 a timeout (a heartbeat that stopped: the worker died) has no type: the attempt was interrupted', () => {
    const heartbeat = new TimeoutFailure('heartbeat timeout', undefined, TimeoutType.HEARTBEAT);
    expect(failureType(fromActivity(heartbeat, RetryState.TIMEOUT))).toBeUndefined();
    expect(failureType(heartbeat)).toBeUndefined();
    expect(isKeyFault(fromActivity(heartbeat, RetryState.TIMEOUT))).toBe(false);
  });

  it('Q3 a plain error, or nothing at all, has no type', () => {
    expect(failureType(new Error('boom'))).toBeUndefined();
    expect(failureType(fromActivity(new Error('boom')))).toBeUndefined();
    expect(failureType(undefined)).toBeUndefined();
    expect(failureType('outage')).toBeUndefined();
  });

  it('Q3 an application failure without a type has none', () => {
    expect(failureType(fromActivity(new ApplicationFailure('no type')))).toBeUndefined();
  });
});

describe('the pause a pausing failure asks for (Q3, M3, B1)', () => {
  it('Q3 reads the retry-after and the scope the activity boundary attached', () => {
    const outage = fromActivity(applicationFailure('outage', [{ retryAfterMs: 30_000 }]));
    expect(pauseOf('outage', outage)).toEqual({
      reason: 'outage',
      retryAfterMs: 30_000,
      scope: undefined,
    });
    const budget = fromActivity(
      applicationFailure('budget', [{ retryAfterMs: 3_600_000, scope: 'workspace' }]),
    );
    expect(pauseOf('budget', budget)).toEqual({
      reason: 'budget',
      retryAfterMs: 3_600_000,
      scope: 'workspace',
    });
  });

  it('Q3 without details the pause has no end of its own', () => {
    expect(pauseOf('credit', fromActivity(applicationFailure('credit')))).toEqual({
      reason: 'credit',
      retryAfterMs: null,
      scope: undefined,
    });
    expect(pauseOf('auth', new Error('no details'))).toEqual({
      reason: 'auth',
      retryAfterMs: null,
      scope: undefined,
    });
    expect(
      pauseOf('outage', fromActivity(applicationFailure('outage', [{ retryAfterMs: null }]))),
    ).toMatchObject({ retryAfterMs: null });
  });
});

describe('the category of an attempt where no segment succeeded (J2, J3)', () => {
  it('J3 permanent only when every failure was: one retryable failure makes the attempt retryable', () => {
    expect(
      attemptCategory([
        { index: 0, category: 'content' },
        { index: 1, category: 'timeout' },
        { index: 2, category: 'image' },
      ]),
    ).toBe('timeout');
  });

  it('J2 every failure permanent: the first one names the attempt', () => {
    expect(
      attemptCategory([
        { index: 0, category: 'image' },
        { index: 1, category: 'content' },
      ]),
    ).toBe('image');
  });

  it('J3 no failure recorded (nothing came back) is an internal fault, retried', () => {
    expect(attemptCategory([])).toBe('internal');
  });
});

describe('one outcome for every failed step (Q3, D1, D7)', () => {
  it('D1 D8 a key that does not open the token, or a blob store unlike the fleet’s, is a key fault, local or queued', () => {
    for (const type of [KEY_MISMATCH, CONFIG_MISMATCH]) {
      expect(classifyStepFailure(fromActivity(applicationFailure(type)))).toEqual({
        kind: 'keyFault',
      });
      expect(classifyStepFailure(applicationFailure(type))).toEqual({ kind: 'keyFault' });
    }
  });

  it('D7 an outage of Quire’s own services is infrastructure; a dead token is stale', () => {
    expect(classifyStepFailure(fromActivity(applicationFailure(INFRASTRUCTURE_FAULT)))).toEqual({
      kind: 'infrastructure',
    });
    expect(classifyStepFailure(fromActivity(applicationFailure(STALE_ATTEMPT)))).toEqual({
      kind: 'stale',
    });
  });

  it('Q3 a failure class is a classified failure, with the pause it asks for when it pauses', () => {
    expect(classifyStepFailure(fromActivity(applicationFailure('timeout')))).toEqual({
      kind: 'failed',
      failureClass: 'timeout',
      pause: null,
    });
    const outage = fromActivity(applicationFailure('outage', [{ retryAfterMs: 30_000 }]));
    expect(classifyStepFailure(outage)).toEqual({
      kind: 'failed',
      failureClass: 'outage',
      pause: { reason: 'outage', retryAfterMs: 30_000, scope: undefined },
    });
  });

  it('T3 anything else interrupted the attempt; a timeout names its step for D7', () => {
    expect(classifyStepFailure(new Error('worker shut down'))).toEqual({
      kind: 'interrupted',
      timedOut: null,
    });
    const heartbeat = new TimeoutFailure('heartbeat', { at: 42 }, TimeoutType.HEARTBEAT);
    expect(classifyStepFailure(fromActivity(heartbeat, RetryState.TIMEOUT))).toEqual({
      kind: 'interrupted',
      timedOut: { activityId: '7', lastHeartbeatAt: 42 },
    });
  });

  it('D1 D7 key faults and outages run the same attempt again; nothing else does', () => {
    expect(isRerun({ kind: 'keyFault' })).toBe(true);
    expect(isRerun({ kind: 'infrastructure' })).toBe(true);
    expect(isRerun({ kind: 'stale' })).toBe(false);
    expect(isRerun({ kind: 'final' })).toBe(false);
    // A claim's own outcome names the page's media kind, never a fault.
    expect(isRerun({ state: 'claimed', kind: 'image' })).toBe(false);
    expect(isRerun({ state: 'paused' })).toBe(false);
  });
});
