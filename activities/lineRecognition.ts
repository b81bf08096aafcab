import { Context } from '@temporalio/activity';
import { segmentsOf } from '../core/annotation';
import { payloadsOf } from '../core/checkpoints';
import { isPausing, ProviderError } from '../core/failures';
import { billedProvider } from '../core/pricing';
import { appendTaskEvent } from '../db/attempts';
import {
  loadCheckpoints,
  refreshRecognizeProgress,
  saveSegmentCheckpoint,
} from '../db/checkpoints';
import {
  type AttemptContext,
  pauseFrom,
  type RecognizeOutcome,
  type SegmentFailure,
} from './attemptContext';
import type { AttemptKit } from './attemptKit';
import type { LineSlice, PageMedia, ReadEnding } from './imageReading';
import { protectedLinesOf } from './transcriptStages';

/** How often a long recognition refreshes the job's live counters (the console reads them). */
const PROGRESS_EVERY_MS = 500;

/**
 * T2 line by line: the lines `segment` found, read one engine call each, every line saved
 * before the next; run by `recognize`, and by `segment` itself when it reads on (P7).
 */
export function createLineRecognition(kit: AttemptKit, ending: ReadEnding) {
  const { deps, pool } = kit;

  /**
   * Reads the lines not yet checkpointed one by one, up to `maxSegments`, for at most about
   * `maxMillis`, saving each line's text before the next call (T2). A pausing failure stops at
   * once; a charged failure marks that line failed for this attempt (J2). When no line is left
   * and the job polishes, the polish runs here too if it can (`polishInline`).
   */
  async function recognizeLines(
    ctx: AttemptContext,
    args: LineSlice,
    loaded?: PageMedia,
  ): Promise<RecognizeOutcome & { polished: boolean }> {
    const jobId = ctx.fence.jobId;
    const saved = await loadCheckpoints(pool, jobId);
    const lines = payloadsOf(saved, 'segment').get(0)?.lines;
    if (!lines) throw new Error('recognize ran before segment was checkpointed');
    const done = payloadsOf(saved, 'recognize');
    const { media, page } = loaded ?? (await kit.pageMedia(ctx.pageId));
    // V3: a line a person edited or verified is not read again (the commit keeps it).
    const skip = new Set([...args.skip, ...protectedLinesOf(ctx, segmentsOf(page.annotationPage))]);
    const todo = lines.map((_, i) => i).filter((i) => !done.has(i) && !skip.has(i));
    const batch = todo.slice(0, args.maxSegments);
    const provider = deps.providers.imageEngine(ctx.snapshot.provider);
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
            // D7: a line read waits out an outage of our own database.
            await kit.untilSaved('save line', () =>
              saveSegmentCheckpoint(
                pool,
                ctx.fence,
                index,
                { text: result.text, confidence: result.confidence ?? null },
                {
                  workspaceId: ctx.workspaceId,
                  by: billedProvider(ctx.snapshot, 'engine'),
                  cost: result.cost,
                  occurredAt: deps.now?.(),
                },
              ),
            );
            completed += 1;
            tried += 1;
            previews.push({ index, text: result.text });
            if (Date.now() - progressAt >= PROGRESS_EVERY_MS) {
              progressAt = Date.now();
              await refreshRecognizeProgress(pool, jobId);
            }
          } catch (error) {
            if (!(error instanceof ProviderError) || Context.current().cancellationSignal.aborted)
              throw error;
            await kit.ledger(ctx, 'recognize', null, error.category);
            deps.logger.warn(
              {
                jobId,
                attempt: ctx.fence.attemptNumber,
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
    await refreshRecognizeProgress(pool, jobId);
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
    const remaining = todo.length - tried;
    const last = pause === null && remaining <= 0;
    return {
      total: lines.length,
      completed,
      failures,
      remaining,
      pause,
      polished: last && args.polish === true && (await ending.polishInline(ctx)),
    };
  }

  return { recognizeLines };
}
