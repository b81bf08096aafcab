import { Context } from '@temporalio/activity';
import { afterAll, describe, expect, it } from 'vitest';
import { INFRASTRUCTURE_FAULT } from '../../core/failures';
import { RELEASE_2026_12_PATCH, STATUS_IN_DATABASE_PATCH } from '../../workflows/patches';
import {
  callsOf,
  classified,
  closeConnections,
  patchMarkers,
  recognized,
  runJob,
  timersMs,
} from './harness';

afterAll(closeConnections);

/** The failure an activity raises when Quire's own PostgreSQL or object store is away (D7). */
const outage = () => classified(INFRASTRUCTURE_FAULT);

/** Fails the first `times` calls with `fault`, then answers `then`. */
function failFirst<A extends unknown[], R>(
  times: number,
  fault: () => Error,
  then: (...args: A) => Promise<R>,
) {
  let calls = 0;
  return async (...args: A): Promise<R> => {
    calls += 1;
    if (calls <= times) throw fault();
    return then(...args);
  };
}

/** An engine step that goes silent (no heartbeat) past its heartbeat timeout on its first call. */
function silentFirst<R>(then: () => Promise<R>) {
  let calls = 0;
  return async (): Promise<R> => {
    calls += 1;
    if (calls === 1) await new Promise((resolve) => setTimeout(resolve, 2_500));
    return then();
  };
}

describe('an outage of Quire infrastructure (D7)', () => {
  it('D7 an engine step stopped by an infrastructure fault runs the same attempt again after a pause: no close, no new claim, nothing charged', async () => {
    const run = await runJob({
      segmentPage: failFirst(2, outage, async () => ({ total: 2 })),
    });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1, resultRevision: 1 });
    expect(callsOf(run, 'claimAttempt')).toHaveLength(1);
    expect(callsOf(run, 'closeAttempt')).toEqual([]);
    const segments = callsOf(run, 'segmentPage');
    expect(segments.map(([ref]) => ref)).toEqual([
      expect.objectContaining({ attemptNumber: 1, sealedToken: 'token-1' }),
      expect.objectContaining({ attemptNumber: 1, sealedToken: 'token-1' }),
      expect.objectContaining({ attemptNumber: 1, sealedToken: 'token-1' }),
    ]);
    // 1 s, then 2 s: the pause grows while the outage lasts.
    expect(timersMs(run)).toEqual([1_000, 2_000]);
    // The run took every patch of the release at once, this one's among them.
    expect(patchMarkers(run)).toEqual([RELEASE_2026_12_PATCH, STATUS_IN_DATABASE_PATCH]);
  });

  it('D7 a claim that meets an infrastructure fault claims again after a pause, and a failure being recorded during one is recorded again', async () => {
    let recognizes = 0;
    const run = await runJob({
      claimAttempt: failFirst(1, outage, async (input: { jobId: string }) => ({
        state: 'claimed' as const,
        ref: { jobId: input.jobId, attemptNumber: 1, sealedToken: 'token-1' },
        kind: 'image' as const,
        chargedAttempts: 1,
      })),
      recognizeSegments: async () => {
        recognizes += 1;
        if (recognizes === 1) throw classified('timeout');
        return recognized(2);
      },
      closeAttempt: failFirst(1, outage, async () => ({ jobStatus: 'pending' })),
    });
    expect(run.outcome).toMatchObject({ status: 'completed' });
    expect(callsOf(run, 'claimAttempt')).toHaveLength(2);
    // The close that met the outage recorded nothing; the attempt ran again and succeeded.
    expect(callsOf(run, 'closeAttempt')).toHaveLength(1);
    expect(callsOf(run, 'recognizeSegments')).toHaveLength(2);
  });

  it('D7 an engine step that timed out after it had finished and saved its work resumes the same attempt, uncharged', async () => {
    const run = await runJob(
      {
        segmentPage: silentFirst(async () => ({ total: 2 })),
        stepFinished: async () => ({ finished: true }),
      },
      { input: { heartbeatTimeoutMs: 1_000 } },
    );
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'claimAttempt')).toHaveLength(1);
    const asked = callsOf(run, 'stepFinished');
    expect(asked).toHaveLength(1);
    // No heartbeat reached the server: nothing says it was late, so no wait.
    expect(asked[0]![1]).not.toHaveProperty('waitMs');
    expect(asked[0]![1]).toMatchObject({ runId: (await run.handle.describe()).runId });
    expect(callsOf(run, 'segmentPage').map(([ref]) => ref)).toEqual([
      expect.objectContaining({ sealedToken: 'token-1' }),
      expect.objectContaining({ sealedToken: 'token-1' }),
    ]);
  });

  it('D7 a heartbeat timeout reported long after the last heartbeat (the Temporal server was away) resumes the same attempt, uncharged', async () => {
    let calls = 0;
    const run = await runJob(
      {
        segmentPage: async () => {
          calls += 1;
          if (calls === 1) {
            // The last beat the server recorded, a minute before it timed the step out.
            Context.current().heartbeat({ stage: 'segment', at: Date.now() - 60_000 });
            await new Promise((resolve) => setTimeout(resolve, 2_500));
          }
          return { total: 2 };
        },
        stepFinished: async () => ({ finished: false }),
      },
      { input: { heartbeatTimeoutMs: 1_000 } },
    );
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'claimAttempt')).toHaveLength(1);
    expect(callsOf(run, 'stepFinished')).toEqual([]);
  });

  it('D7 a step timed out a little late is asked about with a wait, since its worker may be saving it; it had finished, so the same attempt resumes', async () => {
    let calls = 0;
    const run = await runJob(
      {
        segmentPage: async () => {
          calls += 1;
          if (calls === 1) {
            Context.current().heartbeat({ stage: 'segment', at: Date.now() - 5_000 });
            await new Promise((resolve) => setTimeout(resolve, 2_500));
          }
          return { total: 2 };
        },
        stepFinished: async () => ({ finished: true }),
      },
      { input: { heartbeatTimeoutMs: 1_000 } },
    );
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'stepFinished').map(([, step]) => step)).toEqual([
      expect.objectContaining({ waitMs: 10_000 }),
    ]);
  });

  it('D7 a step cut off while its attempt is still coming back from an outage it met is the outage too: the same attempt runs again, uncharged', async () => {
    let calls = 0;
    const run = await runJob(
      {
        segmentPage: async () => {
          calls += 1;
          if (calls === 1) throw outage();
          if (calls === 2) await new Promise((resolve) => setTimeout(resolve, 2_500));
          return { total: 2 };
        },
        stepFinished: async () => ({ finished: false }),
      },
      { input: { heartbeatTimeoutMs: 1_000 } },
    );
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'claimAttempt')).toHaveLength(1);
    expect(callsOf(run, 'segmentPage')).toHaveLength(3);
  });

  it('D7 an engine step that timed out without finishing is an interrupted attempt: the next claim (charged crashed) resumes it', async () => {
    const run = await runJob(
      {
        segmentPage: silentFirst(async () => ({ total: 2 })),
        stepFinished: async () => ({ finished: false }),
      },
      { input: { heartbeatTimeoutMs: 1_000 } },
    );
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 2 });
    // The second claim says the run held attempt 1: that one is a crashed lease, charged.
    expect(callsOf(run, 'claimAttempt').map(([input]) => input)).toEqual([
      expect.objectContaining({ knownAttempt: null }),
      expect.objectContaining({ knownAttempt: 1 }),
    ]);
    expect(callsOf(run, 'stepFinished')).toHaveLength(1);
  });
});
