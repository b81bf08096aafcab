import { Context } from '@temporalio/activity';
import { type Segment, segmentsOf } from '../core/annotation';
import { payloadsOf } from '../core/checkpoints';
import { ProviderError } from '../core/failures';
import { overwritesHumanLines } from '../core/jobOptions';
import { humanLineIndexes } from '../core/lineStates';
import { billedProvider } from '../core/pricing';
import {
  assembleTranscript,
  polishedTexts,
  polishInput,
  recognizedSegments,
} from '../core/transcript';
import { recordProgress } from '../db/attempts';
import { loadCheckpoints, saveCheckpoint } from '../db/checkpoints';
import { commitPageRevision, failOnConflict } from '../db/commit';
import { readAttemptPage } from '../db/pages';
import type { AttemptContext, AttemptKit, AttemptRef } from './attemptContext';

/** The provider that polishes a job's text: the one named in its options, or its engine. */
export function polishProviderOf(ctx: AttemptContext): string {
  return billedProvider(ctx.snapshot, 'polish').provider;
}

/**
 * V3: the lines of the page a run does not read, because a person edited or verified them;
 * none when the job was started with `options.overwriteHumanLines: true`.
 */
export function protectedLinesOf(ctx: AttemptContext, segments: readonly Segment[]): number[] {
  return overwritesHumanLines(ctx.snapshot.options) ? [] : humanLineIndexes(segments);
}

/**
 * T2 `polish`: one pass over the recognized text, saved as the polish checkpoint before the
 * commit reads it. Returns whether polished text is saved.
 */
export async function polishCheckpointed(kit: AttemptKit, ctx: AttemptContext): Promise<boolean> {
  const { deps, pool } = kit;
  const saved = await loadCheckpoints(pool, ctx.fence.jobId);
  if (payloadsOf(saved, 'polish').has(0)) return true;
  const recognized = recognizedSegments(saved);
  if (recognized.length === 0) return false;
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
      () => provider.polish(polishInput(recognized), page.kind, kit.callContext(ctx, 'polish')),
    )
    .catch(async (error: unknown) => {
      // A refused call is recorded under the provider that refused it, like a paid one.
      if (error instanceof ProviderError && !Context.current().cancellationSignal.aborted)
        await kit.ledger(ctx, 'polish', null, error.category, by);
      throw error;
    });
  await kit.ledger(ctx, 'polish', result.cost, 'ok', by);
  const texts = polishedTexts(recognized, result.text);
  if (!texts) return false;
  await kit.untilSaved('save polish', () =>
    saveCheckpoint(pool, ctx.fence, 'polish', 0, { texts }),
  );
  return true;
}

/** How a commit ended: the page revision written, or a CAS miss that failed the job. */
export type Committed = { state: 'committed'; revision: number } | { state: 'conflict' };

/**
 * J1 + J2: builds the transcript from the checkpoints (failed segments keep their previous
 * text) and commits it in one fenced transaction; a CAS miss fails the job `conflict`. Run by
 * the `commit` step, or (P6) by the engine step whose read left nothing else to do.
 */
export async function commitAttempt(
  kit: AttemptKit,
  ctx: AttemptContext,
  args: { usePolish: boolean },
): Promise<Committed> {
  const { deps, pool } = kit;
  const { jobId, attemptNumber } = ctx.fence;
  const saved = await loadCheckpoints(pool, jobId);
  const page = await readAttemptPage(pool, ctx.pageId);
  const previous = segmentsOf(page.annotationPage);
  const { segments, completed, total, kept } = assembleTranscript(saved, previous, {
    ...args,
    protectedLines: protectedLinesOf(ctx, previous),
  });
  // Provenance: the engine that read the page in one pass (P1), as saved with its lines;
  // otherwise this worker's engine for the job's provider.
  const engine =
    payloadsOf(saved, 'segment').get(0)?.engine ??
    deps.providers
      .get(ctx.snapshot.provider)
      .identity(ctx.snapshot.model === 'default' ? undefined : ctx.snapshot.model);
  const result = await commitPageRevision(pool, ctx.fence, {
    segments,
    completed,
    failed: total - completed,
    total,
    kept,
    engine,
  });
  // M5: committed or failed on a conflict, the attempt has ended.
  kit.hand.release(jobId);
  if (result.state === 'conflict') {
    await failOnConflict(pool, ctx.fence, result.currentRevision);
    deps.logger.warn({ jobId, attempt: attemptNumber, errorClass: 'conflict' }, 'page changed');
    return { state: 'conflict' };
  }
  deps.logger.info(
    { jobId, attempt: attemptNumber, revision: result.revision, completed, total, kept },
    'transcript committed',
  );
  return { state: 'committed', revision: result.revision };
}

/** The stages every page ends with: `polish` the recognized text, `commit` the transcript. */
export function createTranscriptStages(kit: AttemptKit) {
  const { deps, pool } = kit;

  return {
    /** T2 `polish`: one pass over the recognized text; saved before the commit reads it. */
    async polishSegments(ref: AttemptRef): Promise<{ polished: boolean }> {
      return kit.withAttempt('engine', ref, async (ctx) => ({
        polished: await polishCheckpointed(kit, ctx),
      }));
    },

    /**
     * J1 + J2: builds the transcript from the checkpoints (failed segments keep their
     * previous text) and commits it in one transaction. A CAS miss fails the job `conflict`.
     */
    async commitTranscript(ref: AttemptRef, args: { usePolish: boolean }): Promise<Committed> {
      return kit.withAttempt('db', ref, (ctx) => commitAttempt(kit, ctx, args));
    },
  };
}
