import { Context } from '@temporalio/activity';
import { CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import type { RecognizeOutcome } from '../../activities/transcription';
import { backoffCeilingMs } from '../../core/backoff';
import { type FailureClass, STALE_ATTEMPT } from '../../core/failures';
import { waitUntil } from '../support/wait';
import { callsOf, classified, closeConnections, recognized, runJob, timersMs } from './harness';

afterAll(closeConnections);

/** An attempt in which every line failed with `category` (J2), until attempt `until`. */
function noLineUntil(until: number, category: FailureClass = 'timeout') {
  return async (ref: { attemptNumber: number }): Promise<RecognizeOutcome> => {
    if (ref.attemptNumber >= until) return recognized(2);
    const failures = [0, 1].map((index) => ({ index, category }));
    return { ...recognized(2), completed: 0, failures };
  };
}

describe('retries between attempts (J3)', () => {
  it('J3 a charged attempt backs off before the next claim, within the capped, jittered bounds', async () => {
    const retryInitialMs = 100;
    const retryMaxMs = 300;
    const run = await runJob(
      { recognizeSegments: noLineUntil(4) },
      { input: { retryInitialMs, retryMaxMs } },
    );
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 4 });
    expect(callsOf(run, 'closeAttempt').map(([ref, args]) => [ref, args])).toEqual(
      [1, 2, 3].map((attemptNumber) => [
        expect.objectContaining({ attemptNumber }),
        expect.objectContaining({ outcome: 'retryable_failed', category: 'timeout' }),
      ]),
    );
    const waits = timersMs(run);
    expect(waits).toHaveLength(3);
    waits.forEach((wait, step) => {
      // Step n of the backoff lies between half its ceiling and the ceiling.
      const ceiling = backoffCeilingMs(step, retryInitialMs, retryMaxMs);
      expect(wait).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
      expect(wait).toBeLessThanOrEqual(ceiling);
    });
    expect(backoffCeilingMs(2, retryInitialMs, retryMaxMs)).toBe(retryMaxMs);
    // M5: each closed attempt, and the run's end, releases the page from its worker's hand.
    expect(run.released).toHaveLength(4);
  });

  it('J3 when the close says the attempts are spent the job fails with the category, without a backoff', async () => {
    const run = await runJob({
      recognizeSegments: noLineUntil(99),
      closeAttempt: async () => ({ jobStatus: 'failed' }),
    });
    expect(run.outcome).toMatchObject({ status: 'failed', errorCategory: 'timeout', attempts: 1 });
    expect(timersMs(run)).toEqual([]);
  });

  it('J2 every line failing with a permanent class fails the job at once', async () => {
    const run = await runJob({ recognizeSegments: noLineUntil(99, 'image') });
    expect(run.outcome).toMatchObject({ status: 'failed', errorCategory: 'image', attempts: 1 });
    expect(callsOf(run, 'closeAttempt').map(([, args]) => args)).toEqual([
      expect.objectContaining({ outcome: 'failed', category: 'image' }),
    ]);
    expect(callsOf(run, 'claimAttempt')).toHaveLength(1);
  });
});

describe('polish (J3, M3)', () => {
  it('J3 from attempt polishAttempts + 1 on, the raw text is committed and polish is not called', async () => {
    const run = await runJob(
      { recognizeSegments: noLineUntil(2) },
      { input: { polishAttempts: 1 } },
    );
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 2 });
    expect(callsOf(run, 'segmentPage').map(([ref, args]) => [ref, args])).toEqual([
      [expect.objectContaining({ attemptNumber: 1 }), expect.objectContaining({ polish: true })],
      [expect.objectContaining({ attemptNumber: 2 }), expect.objectContaining({ polish: false })],
    ]);
    expect(callsOf(run, 'polishSegments')).toEqual([]);
    expect(callsOf(run, 'commitTranscript')).toEqual([
      [expect.objectContaining({ attemptNumber: 2 }), { usePolish: false }],
    ]);
  });

  it('M3 a charged polish failure commits the raw text in the same attempt', async () => {
    const run = await runJob({
      polishSegments: async () => {
        throw classified('internal');
      },
    });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'commitTranscript')).toEqual([
      [expect.objectContaining({ attemptNumber: 1 }), { usePolish: false }],
    ]);
    expect(callsOf(run, 'closeAttempt')).toEqual([]);
  });

  it('P1 a page read and polished in one pass goes straight to the commit', async () => {
    const run = await runJob({
      segmentPage: async () => ({
        total: 2,
        read: { completed: 2, failures: [], polished: true },
      }),
    });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'recognizeSegments')).toEqual([]);
    expect(callsOf(run, 'polishSegments')).toEqual([]);
    expect(callsOf(run, 'commitTranscript')).toEqual([[expect.anything(), { usePolish: true }]]);
  });

  it('P7 segment is asked to read the lines for one slice, skipping the lines this attempt failed', async () => {
    const run = await runJob({}, { input: { recognizeSliceMs: 750 } });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'segmentPage').map(([, args]) => args)).toEqual([
      { polish: true, maxMillis: 750, skip: [], commit: true },
    ]);
  });

  it('P7 a last recognize slice that polished in place goes straight to the commit', async () => {
    const run = await runJob({
      segmentPage: async () => ({
        total: 2,
        partial: { ...recognized(2), completed: 1, remaining: 1 },
      }),
      recognizeSegments: async () => ({ ...recognized(2), polished: true }),
    });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'recognizeSegments').map(([, args]) => args)).toEqual([
      expect.objectContaining({ polish: true }),
    ]);
    expect(callsOf(run, 'polishSegments')).toEqual([]);
    expect(callsOf(run, 'commitTranscript')).toEqual([[expect.anything(), { usePolish: true }]]);
  });

  it('P7 what the slice in segment left is read by recognize, the failed lines skipped', async () => {
    const run = await runJob({
      segmentPage: async () => ({
        total: 3,
        partial: {
          total: 3,
          completed: 1,
          failures: [{ index: 1, category: 'timeout' }],
          remaining: 1,
          pause: null,
        },
      }),
      recognizeSegments: async () => ({ ...recognized(3), completed: 2, failures: [] }),
    });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 1 });
    expect(callsOf(run, 'recognizeSegments').map(([, args]) => args)).toEqual([
      expect.objectContaining({ skip: [1] }),
    ]);
    // The raw text of the lines read is polished after recognize, as before.
    expect(callsOf(run, 'polishSegments')).toHaveLength(1);
  });
});

describe('the commit in the read (P6)', () => {
  it('P6 a read its engine step committed ends the job with that revision: no commit step', async () => {
    const run = await runJob({
      segmentPage: async () => ({
        total: 2,
        read: {
          completed: 2,
          failures: [],
          polished: true,
          committed: { state: 'committed', revision: 7 },
        },
      }),
    });
    expect(run.outcome).toMatchObject({ status: 'completed', resultRevision: 7, attempts: 1 });
    expect(callsOf(run, 'commitTranscript')).toEqual([]);
    expect(callsOf(run, 'polishSegments')).toEqual([]);
    // M5: the step may have run on another process; the run's end releases the page here.
    expect(run.released).toEqual([expect.stringMatching(/^job-/)]);
  });

  it('P6 J1 a commit in the read that met a changed page fails the job conflict', async () => {
    const run = await runJob({
      segmentPage: async () => ({
        total: 2,
        partial: { ...recognized(2), completed: 1, remaining: 1 },
      }),
      recognizeSegments: async () => ({
        ...recognized(2),
        polished: true,
        committed: { state: 'conflict', currentRevision: 1 },
      }),
    });
    expect(run.outcome).toMatchObject({ status: 'failed', errorCategory: 'conflict' });
    expect(callsOf(run, 'recognizeSegments').map(([, args]) => args)).toEqual([
      expect.objectContaining({ commit: true }),
    ]);
    expect(callsOf(run, 'commitTranscript')).toEqual([]);
  });

  it('P6 a read that left its polish to the polish stage is committed by the commit step', async () => {
    const run = await runJob({
      segmentPage: async () => ({
        total: 2,
        read: { completed: 2, failures: [], polished: false },
      }),
    });
    expect(run.outcome).toMatchObject({ status: 'completed', resultRevision: 1 });
    expect(callsOf(run, 'polishSegments')).toHaveLength(1);
    expect(callsOf(run, 'commitTranscript')).toEqual([[expect.anything(), { usePolish: true }]]);
  });

  it('P6 a commit whose report was lost is found by the next claim, with its revision', async () => {
    let claims = 0;
    const run = await runJob({
      async claimAttempt(input) {
        claims += 1;
        if (claims > 1) return { state: 'inactive', status: 'completed', revision: 4 };
        const ref = { jobId: input.jobId, attemptNumber: 1, sealedToken: 'token-1' };
        return { state: 'claimed', ref, kind: 'image', chargedAttempts: 1 };
      },
      // The step committed, then its worker died before reporting: it reads as a stale token.
      segmentPage: async () => {
        throw classified(STALE_ATTEMPT);
      },
    });
    expect(run.outcome).toMatchObject({ status: 'completed', resultRevision: 4 });
    expect(callsOf(run, 'commitTranscript')).toEqual([]);
  });
});

describe('an interrupted attempt (T3)', () => {
  it('T3 an engine step whose heartbeat stops (its worker died) ends the attempt unclosed; the next claim follows', async () => {
    let recognizes = 0;
    const run = await runJob(
      {
        async recognizeSegments() {
          recognizes += 1;
          // No heartbeat: the heartbeat timeout ends the step, as when its worker dies.
          if (recognizes === 1) await Context.current().sleep(2_500);
          return recognized(2);
        },
      },
      { input: { heartbeatTimeoutMs: 1_000 } },
    );
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 2 });
    expect(callsOf(run, 'claimAttempt')).toHaveLength(2);
    // The next claim closes it `lease_expired` in the database; the workflow closes nothing.
    expect(callsOf(run, 'closeAttempt')).toEqual([]);
    expect(timersMs(run)).toEqual([]);
  });

  it('T3 an engine step that fails with an error of no failure class reads as interrupted too', async () => {
    let segments = 0;
    const run = await runJob({
      async segmentPage() {
        segments += 1;
        if (segments === 1) throw new Error('engine process exited');
        return { total: 2 };
      },
    });
    expect(run.outcome).toMatchObject({ status: 'completed', attempts: 2 });
    expect(callsOf(run, 'closeAttempt')).toEqual([]);
  });
});

describe('cancellation (J5)', () => {
  it('J5 a canceled run cleans up with its running attempt and ends cancelled', async () => {
    const run = await runJob(
      {
        async recognizeSegments() {
          const context = Context.current();
          for (;;) {
            context.heartbeat();
            await context.sleep(100);
          }
        },
      },
      {
        async during(handle, calls) {
          await waitUntil(() => calls.some((c) => c.step === 'recognizeSegments'));
          await handle.cancel();
        },
      },
    );
    expect(run.outcome).toBeInstanceOf(WorkflowFailedError);
    expect((run.outcome as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect((await run.handle.describe()).status.name).toBe('CANCELLED');
    expect(callsOf(run, 'cancelCleanup')).toEqual([
      [{ jobId: expect.any(String), attemptNumber: 1 }],
    ]);
    expect(callsOf(run, 'commitTranscript')).toEqual([]);
  });

  it('J5 a job found canceled in the database gets its cleanup and ends canceled', async () => {
    const run = await runJob({
      claimAttempt: async () => ({ state: 'inactive', status: 'canceled' }),
    });
    expect(run.outcome).toMatchObject({ status: 'canceled', attempts: 0 });
    expect(callsOf(run, 'cancelCleanup')).toEqual([
      [{ jobId: expect.any(String), attemptNumber: null }],
    ]);
  });
});
