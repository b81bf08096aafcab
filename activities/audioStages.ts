import { Context } from '@temporalio/activity';
import { sleepUnlessAborted } from '../core/abort';
import { payloadsOf } from '../core/checkpoints';
import { isPausing, ProviderError } from '../core/failures';
import { loadCheckpoints, saveAudioSegments, saveEngineSubmission } from '../db/checkpoints';
import { listUndeletedEngineJobs, markEngineCopyDeleted } from '../db/engineJobs';
import { type AttemptRef, pauseFrom, type RecognizeOutcome } from './attemptContext';
import type { AttemptKit } from './attemptKit';

/** T2 for recordings: `submit` hands the recording to the engine, `recognize` awaits it. */
export function createAudioStages(kit: AttemptKit) {
  const { deps, pool } = kit;

  return {
    /**
     * T2 `submit` for audio: hands the recording to the engine and saves the engine job id
     * before anything else, because once the engine holds it our own copy may be deleted.
     */
    async submitAudio(ref: AttemptRef): Promise<{ engineJobId: string }> {
      return kit.withAttempt('engine', ref, async (ctx) => {
        const saved = await loadCheckpoints(pool, ref.jobId, 'submit');
        const submitted = payloadsOf(saved, 'submit').get(0);
        if (submitted) return submitted;
        const { media, page } = await kit.pageMedia(ctx.pageId);
        const provider = deps.providers.audioEngine(ctx.snapshot.provider);
        await kit.guardBudget(ctx, {
          units: Math.max(1, Math.ceil((page.durationMs ?? 0) / 1000)),
          unit: 'audio_second',
        });
        const result = await kit.withHeartbeat(
          () => ({ stage: 'submit' }),
          () => provider.submitAudio(media, kit.callContext(ctx, 'submit')),
        );
        // D7: the engine holds the recording now; an outage waits rather than losing that.
        await kit.untilSaved('save submission', () =>
          saveEngineSubmission(pool, ctx.fence, {
            provider: ctx.snapshot.provider,
            engineJobId: result.engineJobId,
            workspaceId: ctx.workspaceId,
            pageId: ctx.pageId,
          }),
        );
        await kit.ledger(ctx, 'submit', result.cost, 'ok');
        return { engineJobId: result.engineJobId };
      });
    },

    /**
     * T2 `recognize` for audio: polls the engine until done, saves the raw segments as a
     * checkpoint, and only then deletes the engine's copy: the checkpoint is the last copy.
     */
    async awaitAudio(ref: AttemptRef): Promise<RecognizeOutcome> {
      return kit.withAttempt('engine', ref, async (ctx) => {
        const saved = await loadCheckpoints(pool, ref.jobId);
        const existing = payloadsOf(saved, 'recognize').get(0);
        if (existing && 'segments' in existing) {
          const n = existing.segments.length;
          return { total: n, completed: n, failures: [], remaining: 0, pause: null };
        }
        const submitted = payloadsOf(saved, 'submit').get(0);
        if (!submitted) throw new Error('recognize ran before submit was checkpointed');
        const provider = deps.providers.audioEngine(ctx.snapshot.provider);
        const signal = Context.current().cancellationSignal;
        try {
          let progress = 0;
          const segments = await kit.withHeartbeat(
            () => ({ stage: 'recognize', progress }),
            async () => {
              for (;;) {
                const poll = await provider.pollAudio(
                  submitted.engineJobId,
                  kit.callContext(ctx, 'poll'),
                );
                if (poll.state === 'done') {
                  await kit.ledger(ctx, 'transcribe', poll.cost, 'ok');
                  return poll.segments;
                }
                progress = poll.progress ?? progress;
                await sleepUnlessAborted(deps.audioPollMs ?? 1_000, signal);
              }
            },
          );
          await kit.untilSaved('save transcript', () =>
            saveAudioSegments(pool, ctx.fence, segments),
          );
          await provider.deleteAudio(submitted.engineJobId, kit.callContext(ctx, 'delete'));
          await markEngineCopyDeleted(pool, {
            provider: ctx.snapshot.provider,
            engineJobId: submitted.engineJobId,
          });
          return {
            total: segments.length,
            completed: segments.length,
            failures: [],
            remaining: 0,
            pause: null,
          };
        } catch (error) {
          if (error instanceof ProviderError && isPausing(error.category) && !signal.aborted) {
            return {
              total: 0,
              completed: 0,
              failures: [],
              remaining: 1,
              pause: pauseFrom(error),
            };
          }
          throw error;
        }
      });
    },
  };
}

/** J5: deletes every engine copy of a job's recording that is still held, then marks it. */
export async function deleteEngineCopies(kit: AttemptKit, jobId: string): Promise<void> {
  for (const job of await listUndeletedEngineJobs(kit.pool, jobId)) {
    const provider = kit.deps.providers.audioEngine(job.provider);
    await provider.deleteAudio(job.engineJobId, {
      signal: new AbortController().signal,
      language: 'und',
      options: {},
      callKey: `${jobId}:cleanup`,
    });
    await markEngineCopyDeleted(kit.pool, job);
  }
}
