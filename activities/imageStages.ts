import { Context } from '@temporalio/activity';
import { segmentsOf } from '../core/annotation';
import { payloadsOf } from '../core/checkpoints';
import { isPausing, ProviderError } from '../core/failures';
import { linesFromAnnotation } from '../core/transcript';
import { appendTaskEvent } from '../db/attempts';
import {
  loadCheckpoints,
  refreshRecognizeProgress,
  saveSegmentCheckpoint,
  saveSegmentedLines,
} from '../db/checkpoints';
import {
  type AttemptKit,
  type AttemptRef,
  pauseFrom,
  type RecognizeOutcome,
  type SegmentFailure,
} from './attemptContext';

/** How often a long recognition refreshes the job's live counters (the console reads them). */
const PROGRESS_EVERY_MS = 500;

/** T2 for image pages: `segment` finds the lines, `recognize` reads them one by one. */
export function createImageStages(kit: AttemptKit) {
  const { deps, pool } = kit;

  return {
    /** T2 `segment`: finds the lines of an image page, unless a checkpoint or the page has them. */
    async segmentPage(ref: AttemptRef): Promise<{ total: number }> {
      return kit.withAttempt('engine', ref, async (ctx) => {
        const saved = await loadCheckpoints(pool, ref.jobId, 'segment');
        const segmented = payloadsOf(saved, 'segment').get(0);
        if (segmented) return { total: segmented.lines.length };
        const { media, page } = await kit.pageMedia(ctx.pageId);
        let lines = linesFromAnnotation(segmentsOf(page.annotationPage));
        if (lines.length === 0) {
          const provider = deps.providers.get(ctx.snapshot.provider);
          await kit.guardBudget(ctx, { units: 1, unit: 'page' });
          const result = await kit.withHeartbeat(
            () => ({ stage: 'segment' }),
            () => provider.segmentPage(media, kit.callContext(ctx, 'segment')),
          );
          await kit.ledger(ctx, 'segment', result.cost, 'ok');
          lines = result.lines;
        }
        await saveSegmentedLines(pool, ctx.fence, lines);
        return { total: lines.length };
      });
    },

    /**
     * T2 `recognize` for image pages: recognizes up to `maxSegments` lines not yet
     * checkpointed, for at most about `maxMillis`, saving each line's text before going on.
     * A pausing failure stops at once; a charged failure marks that line failed for this
     * attempt (J2). Bounding by time keeps the workflow's view of progress fresh and a
     * drain short, whatever the engine's speed, with few activities per page.
     */
    async recognizeSegments(
      ref: AttemptRef,
      args: { maxSegments: number; skip: number[]; maxMillis?: number },
    ): Promise<RecognizeOutcome> {
      return kit.withAttempt('engine', ref, async (ctx) => {
        const saved = await loadCheckpoints(pool, ref.jobId);
        const lines = payloadsOf(saved, 'segment').get(0)?.lines;
        if (!lines) throw new Error('recognize ran before segment was checkpointed');
        const done = payloadsOf(saved, 'recognize');
        const skip = new Set(args.skip);
        const todo = lines.map((_, i) => i).filter((i) => !done.has(i) && !skip.has(i));
        const batch = todo.slice(0, args.maxSegments);
        const { media } = await kit.pageMedia(ctx.pageId);
        const provider = deps.providers.get(ctx.snapshot.provider);
        const failures: SegmentFailure[] = [];
        let completed = done.size;
        let pause: RecognizeOutcome['pause'] = null;
        let progressAt = Date.now();
        const startedAt = Date.now();
        let tried = 0;
        const previews: Array<{ index: number; text: string }> = [];
        if (batch.length > 0) {
          await appendTaskEvent(pool, ctx.fence, 'started', {
            segments: batch,
            totalSegments: lines.length,
          });
        }
        await kit.withHeartbeat(
          () => ({ stage: 'recognize', completed, total: lines.length }),
          async () => {
            for (const index of batch) {
              if (args.maxMillis && tried > 0 && Date.now() - startedAt >= args.maxMillis) break;
              try {
                const line = lines[index]!;
                await kit.guardBudget(ctx, { units: 1, unit: 'line' });
                const result = await provider.recognizeLine(
                  media,
                  line,
                  kit.callContext(ctx, 'recognize', index),
                );
                // Saved before the next line starts: a new attempt resumes after it (T2).
                await saveSegmentCheckpoint(
                  pool,
                  ctx.fence,
                  index,
                  { text: result.text, confidence: result.confidence ?? null },
                  {
                    workspaceId: ctx.workspaceId,
                    provider: ctx.snapshot.provider,
                    units: result.cost.units,
                    unit: result.cost.unit,
                    costMicros: Math.round(
                      result.cost.units * (ctx.snapshot.price[result.cost.unit] ?? 0),
                    ),
                    occurredAt: deps.now?.(),
                  },
                );
                completed += 1;
                tried += 1;
                previews.push({ index, text: result.text });
                if (Date.now() - progressAt >= PROGRESS_EVERY_MS) {
                  progressAt = Date.now();
                  await refreshRecognizeProgress(pool, ref.jobId);
                }
              } catch (error) {
                if (
                  !(error instanceof ProviderError) ||
                  Context.current().cancellationSignal.aborted
                )
                  throw error;
                await kit.ledger(ctx, 'recognize', null, error.category);
                deps.logger.warn(
                  {
                    jobId: ref.jobId,
                    attempt: ref.attemptNumber,
                    segment: index,
                    errorClass: error.category,
                  },
                  'segment failed',
                );
                if (isPausing(error.category)) {
                  pause = pauseFrom(error);
                  return;
                }
                failures.push({ index, category: error.category });
                tried += 1;
              }
            }
          },
        );
        await refreshRecognizeProgress(pool, ref.jobId);
        if (tried > 0) {
          // A preview of this slice's lines: transient, not the canonical transcript.
          await appendTaskEvent(pool, ctx.fence, 'completed', {
            segments: previews,
            failed: failures.map((f) => ({ index: f.index, errorCategory: f.category })),
            completedSegments: completed,
            failedSegments: failures.length,
            totalSegments: lines.length,
          });
        }
        return {
          total: lines.length,
          completed,
          failures,
          remaining: todo.length - tried,
          pause,
        };
      });
    },
  };
}
