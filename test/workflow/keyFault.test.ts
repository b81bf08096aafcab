import { afterAll, describe, expect, it } from 'vitest';
import { RELEASE_2026_12_PATCH, STATUS_IN_DATABASE_PATCH } from '../../workflows/patches';
import {
  callsOf,
  classified,
  closeConnections,
  keepHistory,
  keyMismatch,
  patchMarkers,
  recognized,
  runJob,
  timersMs,
} from './harness';

afterAll(closeConnections);

/** Fails the first `times` calls with a key fault, then answers `then`. */
function keyFaultFirst<A extends unknown[], R>(times: number, then: (...args: A) => Promise<R>) {
  let calls = 0;
  return async (...args: A): Promise<R> => {
    calls += 1;
    if (calls <= times) throw keyMismatch();
    return then(...args);
  };
}

describe('a fleet key fault (D1)', () => {
  it('D1 an engine step that meets a key fault runs again in the same attempt after a pause: no close, no new claim, the job completes', async () => {
    const run = await runJob({
      segmentPage: keyFaultFirst(1, async () => ({ total: 2 })),
    });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1, resultRevision: 1 });
    expect(callsOf(run, 'claimAttempt')).toHaveLength(1);
    expect(callsOf(run, 'closeAttempt')).toEqual([]);
    const segments = callsOf(run, 'segmentPage');
    expect(segments).toHaveLength(2);
    // The same attempt: its token, not a new claim's.
    expect(segments.map(([ref]) => ref)).toEqual([
      expect.objectContaining({ attemptNumber: 1, sealedToken: 'token-1' }),
      expect.objectContaining({ attemptNumber: 1, sealedToken: 'token-1' }),
    ]);
    expect(timersMs(run)).toEqual([1_000]);
    // The run took every patch of the release at once, this one's among them.
    expect(patchMarkers(run)).toEqual([RELEASE_2026_12_PATCH, STATUS_IN_DATABASE_PATCH]);
    keepHistory(run, 'image-key-fault');
  });

  it('D1 a key fault while the failure is recorded runs the same attempt again; nothing is charged for it', async () => {
    let recognizes = 0;
    const run = await runJob({
      recognizeSegments: async () => {
        recognizes += 1;
        if (recognizes === 1) throw classified('timeout');
        return recognized(2);
      },
      closeAttempt: keyFaultFirst(1, async () => ({ jobStatus: 'pending' })),
    });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'claimAttempt')).toHaveLength(1);
    // The one close was the one that met the fault: it recorded nothing.
    expect(callsOf(run, 'closeAttempt')).toHaveLength(1);
    expect(callsOf(run, 'segmentPage')).toHaveLength(2);
    expect(timersMs(run)).toEqual([1_000]);
  });

  it('D1 a local claim that meets a key fault goes to the queue; a queued claim that meets one is made again after a pause', async () => {
    const faulted = await runJob({
      claimAttempt: keyFaultFirst(2, async (input: { jobId: string }) => ({
        state: 'claimed' as const,
        ref: { jobId: input.jobId, attemptNumber: 1, sealedToken: 'token-1' },
        kind: 'image' as const,
        chargedAttempts: 1,
      })),
    });
    expect(faulted.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    // Local, then queued (both met the fault), then local again after the pause.
    expect(faulted.calls.filter((c) => c.step === 'claimAttempt').map((c) => c.local)).toEqual([
      true,
      false,
      true,
    ]);
    expect(timersMs(faulted)).toEqual([1_000]);
    keepHistory(faulted, 'image-key-fault-claim');
  });

  it('D1 a local commit that meets a key fault is made on the queue at once, with the same arguments', async () => {
    const run = await runJob({
      commitTranscript: keyFaultFirst(1, async () => ({
        state: 'committed' as const,
        revision: 4,
      })),
    });
    expect(run.outcome).toMatchObject({ status: 'completed', resultRevision: 4, attempts: 1 });
    const commits = run.calls.filter((c) => c.step === 'commitTranscript');
    expect(commits.map((c) => c.local)).toEqual([true, false]);
    expect(commits[1]?.args).toEqual(commits[0]?.args);
    expect(timersMs(run)).toEqual([]);
  });
});
