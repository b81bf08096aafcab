import { Context } from '@temporalio/activity';
import { segmentsOf } from '../core/annotation';
import { payloadsOf } from '../core/checkpoints';
import { ProviderError } from '../core/failures';
import { billedProvider } from '../core/pricing';
import {
  assembleTranscript,
  polishedTexts,
  polishInput,
  recognizedSegments,
} from '../core/transcript';
import { commitPageRevision, failOnConflict, recordProgress } from '../db/attempts';
import { loadCheckpoints, saveCheckpoint } from '../db/checkpoints';
import { readAttemptPage } from '../db/pages';
import type { AttemptKit, AttemptRef } from './attemptContext';

/** The stages every page ends with: `polish` the recognized text, `commit` the transcript. */
export function createTranscriptStages(kit: AttemptKit) {
  const { deps, pool } = kit;

  return {
    /** T2 `polish`: one pass over the recognized text; saved before the commit reads it. */
    async polishSegments(ref: AttemptRef): Promise<{ polished: boolean }> {
      return kit.withAttempt('engine', ref, async (ctx) => {
        const saved = await loadCheckpoints(pool, ref.jobId);
        if (payloadsOf(saved, 'polish').has(0)) return { polished: true };
        const recognized = recognizedSegments(saved);
        if (recognized.length === 0) return { polished: false };
        const page = await readAttemptPage(pool, ctx.pageId);
        // The engine's own (offline, deterministic) polish, or a model pass through another
        // provider named in the job's options, e.g. `{ polishProvider: "openai-chat" }`:
        // then priced, recorded and, on a pausing failure, paused under that one (M3).
        const by = billedProvider(ctx.snapshot, 'polish');
        const provider = deps.providers.get(by.provider);
        await recordProgress(pool, ctx.fence, { stage: 'polish' });
        await kit.guardBudget(ctx, { units: 1, unit: 'call' }, by);
        const result = await kit
          .withHeartbeat(
            () => ({ stage: 'polish' }),
            () =>
              provider.polish(polishInput(recognized), page.kind, kit.callContext(ctx, 'polish')),
          )
          .catch(async (error: unknown) => {
            // A refused call is recorded under the provider that refused it, like a paid one.
            if (error instanceof ProviderError && !Context.current().cancellationSignal.aborted)
              await kit.ledger(ctx, 'polish', null, error.category, by);
            throw error;
          });
        await kit.ledger(ctx, 'polish', result.cost, 'ok', by);
        const texts = polishedTexts(recognized, result.text);
        if (!texts) return { polished: false };
        await saveCheckpoint(pool, ctx.fence, 'polish', 0, { texts });
        return { polished: true };
      });
    },

    /**
     * J1 + J2: builds the transcript from the checkpoints (failed segments keep their
     * previous text) and commits it in one transaction. A CAS miss fails the job `conflict`.
     */
    async commitTranscript(
      ref: AttemptRef,
      args: { usePolish: boolean },
    ): Promise<{ state: 'committed'; revision: number } | { state: 'conflict' }> {
      return kit.withAttempt('db', ref, async (ctx) => {
        const saved = await loadCheckpoints(pool, ref.jobId);
        const page = await readAttemptPage(pool, ctx.pageId);
        const { segments, completed, total } = assembleTranscript(
          saved,
          segmentsOf(page.annotationPage),
          args,
        );
        const provider = deps.providers.get(ctx.snapshot.provider);
        const result = await commitPageRevision(pool, ctx.fence, {
          segments,
          completed,
          failed: total - completed,
          total,
          engine: provider.identity(
            ctx.snapshot.model === 'default' ? undefined : ctx.snapshot.model,
          ),
        });
        if (result.state === 'conflict') {
          await failOnConflict(pool, ctx.fence, result.currentRevision);
          deps.logger.warn(
            { jobId: ref.jobId, attempt: ref.attemptNumber, errorClass: 'conflict' },
            'page changed',
          );
          return { state: 'conflict' };
        }
        deps.logger.info(
          {
            jobId: ref.jobId,
            attempt: ref.attemptNumber,
            revision: result.revision,
            completed,
            total,
          },
          'transcript committed',
        );
        return { state: 'committed', revision: result.revision };
      });
    },
  };
}
