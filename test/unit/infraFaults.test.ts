import {
  ActivityFailure,
  ApplicationFailure,
  RetryState,
  TimeoutFailure,
  TimeoutType,
} from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { isMissingObject } from '../../blobs/store';
import {
  CONFIG_MISMATCH,
  INFRASTRUCTURE_FAULT,
  InfrastructureFaultError,
  isInfrastructureError,
} from '../../core/failures';
import {
  isInfrastructureFault,
  isKeyFault,
  timedOutStep,
} from '../../workflows/failureClassification';
import { infraFaultPauseMs, timedOutLate } from '../../workflows/outages';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('what counts as an outage of Quire infrastructure (D7)', () => {
  it('D7 refused, reset and unreachable connections and PostgreSQL shutdown codes are infrastructure faults', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EAI_AGAIN'])
      expect(isInfrastructureError(withCode(code))).toBe(true);
    // 57P01 admin shutdown, 57P03 cannot connect now, 08006 connection failure, 53300.
    for (const code of ['57P01', '57P03', '08006', '53300'])
      expect(isInfrastructureError(withCode(code))).toBe(true);
    expect(isInfrastructureError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(
      isInfrastructureError(Object.assign(new Error('x'), { name: 'BlobStoreUnavailableError' })),
    ).toBe(true);
    // Node's happy-eyeballs connect failure: an AggregateError of refused attempts.
    expect(isInfrastructureError(new AggregateError([withCode('ECONNREFUSED')], 'connect'))).toBe(
      true,
    );
    expect(isInfrastructureError(new Error('wrapped', { cause: withCode('ECONNRESET') }))).toBe(
      true,
    );
  });

  it('D7 query errors, missing objects and engine errors are not infrastructure faults', () => {
    // 23505 unique violation, 42P01 undefined table, 22P02 invalid text: the query's fault.
    for (const code of ['23505', '42P01', '22P02', 'ENOENT'])
      expect(isInfrastructureError(withCode(code))).toBe(false);
    expect(isInfrastructureError(new Error('engine crashed'))).toBe(false);
    expect(isInfrastructureError(undefined)).toBe(false);
    expect(new InfrastructureFaultError('postgres', 'gone').name).toBe(INFRASTRUCTURE_FAULT);
  });

  it('D7 the workflow reads an InfrastructureFault as such, and its pause grows from 1 s to 30 s', () => {
    const failure = new ActivityFailure(
      'failed',
      'segmentPage',
      '3',
      RetryState.NON_RETRYABLE_FAILURE,
      'w',
      ApplicationFailure.create({ type: INFRASTRUCTURE_FAULT, nonRetryable: true }),
    );
    expect(isInfrastructureFault(failure)).toBe(true);
    expect([0, 1, 2, 5, 10].map(infraFaultPauseMs)).toEqual([1_000, 2_000, 4_000, 30_000, 30_000]);
  });

  it('D7 a heartbeat timeout reported long after the last heartbeat is the server having been away, not a dead worker', () => {
    const timeout = new ActivityFailure(
      'timed out',
      'segmentPage',
      '5',
      RetryState.NON_RETRYABLE_FAILURE,
      'w',
      new TimeoutFailure('heartbeat', { stage: 'segment', at: 1_000_000 }, TimeoutType.HEARTBEAT),
    );
    expect(timedOutStep(timeout)).toEqual({ activityId: '5', lastHeartbeatAt: 1_000_000 });
    // Heartbeat timeout 3 s: on time (a dead worker) at +3.5 s, late (an outage) at +120 s.
    expect(timedOutLate(1_000_000, 1_003_500, 3_000)).toBe(false);
    expect(timedOutLate(1_000_000, 1_120_000, 3_000)).toBe(true);
    expect(timedOutLate(null, 1_120_000, 3_000)).toBe(false);
    expect(timedOutStep(new Error('not a timeout'))).toBeUndefined();
  });
});

describe('a blob store that is not the fleet’s (D8)', () => {
  it('D8 a missing object is told from a store that does not answer; the fault is read as a fleet fault', () => {
    expect(isMissingObject(withCode('ENOENT'))).toBe(true);
    expect(isMissingObject(Object.assign(new Error('x'), { name: 'NoSuchKey' }))).toBe(true);
    expect(
      isMissingObject(Object.assign(new Error('x'), { $metadata: { httpStatusCode: 404 } })),
    ).toBe(true);
    expect(isMissingObject(withCode('ECONNREFUSED'))).toBe(false);
    const fault = ApplicationFailure.create({ type: CONFIG_MISMATCH, nonRetryable: true });
    expect(isKeyFault(fault)).toBe(true);
  });
});
