import { afterAll, describe, expect, it } from 'vitest';
import { SIGNALS } from '../../core/temporal';
import { waitUntil } from '../support/wait';
import {
  callsOf,
  classified,
  closeConnections,
  progressOf,
  recognized,
  runJob,
  timersMs,
} from './harness';

afterAll(closeConnections);

/** The first call answers a pause of the provider; later calls read the page. */
function pauseFirst(reason: 'credit' | 'outage', retryAfterMs: number | null = null) {
  let calls = 0;
  return async () => {
    calls += 1;
    if (calls > 1) return recognized(2);
    return { ...recognized(2), completed: 1, remaining: 1, pause: { reason, retryAfterMs } };
  };
}

describe('a paused provider (Q3)', () => {
  it("Q3 a pause with no end of its own waits for the operator's Resume, then the next attempt is claimed; nothing is closed or charged", async () => {
    const run = await runJob(
      { recognizeSegments: pauseFirst('credit') },
      {
        async during(handle) {
          let seen: unknown;
          await waitUntil(async () => {
            seen = await progressOf(handle);
            return (seen as { stage: string }).stage === 'paused';
          });
          expect(seen).toMatchObject({
            status: 'pending',
            stage: 'paused',
            pausedReason: 'credit',
          });
          await handle.signal(SIGNALS.providerResumed, { provider: 'simulated' });
        },
      },
    );
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 2 });
    expect(callsOf(run, 'pauseProvider')).toEqual([
      [
        expect.objectContaining({ attemptNumber: 1 }),
        {
          reason: 'credit',
          retryAfterMs: null,
          counts: { completed: 1, failed: 0, total: 2 },
        },
      ],
    ]);
    expect(callsOf(run, 'claimAttempt')).toHaveLength(2);
    expect(callsOf(run, 'closeAttempt')).toEqual([]);
    // The wait had no end of its own: the Resume ended it, not the recheck timer.
    expect(timersMs(run)).toEqual([10 * 60_000]);
  });

  it('Q3 a pause that ends by itself (an outage past its Retry-After) is claimed again without a Resume', async () => {
    const run = await runJob({
      recognizeSegments: pauseFirst('outage', 1_200),
      pauseProvider: async () => ({ resumeAtMs: Date.now() + 1_200, episode: 1, newEpisode: true }),
    });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 2 });
    const [wait] = timersMs(run);
    expect(wait).toBeGreaterThanOrEqual(1_000);
    expect(wait).toBeLessThanOrEqual(1_200);
  });

  it('Q3 a claim that finds the provider paused waits for the pause to end, then claims', async () => {
    let claims = 0;
    const run = await runJob({
      async claimAttempt(input) {
        claims += 1;
        if (claims === 1) return { state: 'paused', reason: 'outage', resumeAtMs: Date.now() };
        const ref = { jobId: input.jobId, attemptNumber: 1, sealedToken: 'token-1' };
        return { state: 'claimed', ref, kind: 'image', chargedAttempts: 1 };
      },
    });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'claimAttempt')).toHaveLength(2);
    // A pause that is already over still waits the shortest pause, a second.
    expect(timersMs(run)).toEqual([1_000]);
  });

  it('M3 a polish call that pauses pauses the polish provider, not the job’s own', async () => {
    let polishes = 0;
    const run = await runJob(
      {
        async polishSegments() {
          polishes += 1;
          if (polishes === 1) throw classified('credit');
          return { polished: true };
        },
      },
      {
        async during(handle) {
          await waitUntil(async () => (await progressOf(handle)).stage === 'paused');
          await handle.signal(SIGNALS.providerResumed, { provider: 'polisher' });
        },
      },
    );
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 2 });
    expect(callsOf(run, 'pauseProvider').map(([, request]) => request)).toEqual([
      expect.objectContaining({ reason: 'credit', stage: 'polish' }),
    ]);
    expect(callsOf(run, 'commitTranscript')).toEqual([
      [expect.objectContaining({ attemptNumber: 2 }), { usePolish: true }],
    ]);
  });
});
