import { segmentsOf } from '../core/annotation';
import { payloadsOf } from '../core/checkpoints';
import { linesFromAnnotation } from '../core/transcript';
import { loadCheckpoints, saveSegmentedLines } from '../db/checkpoints';
import type { AttemptContext, AttemptRef } from './attemptContext';
import type { AttemptKit } from './attemptKit';
import {
  createReadEnding,
  type LineSlice,
  type PageMedia,
  type SegmentArgs,
  type Segmented,
  type SliceOutcome,
} from './imageReading';
import { createLineRecognition } from './lineRecognition';
import { createPageRead } from './pageRead';

/**
 * T2 for image pages: `segment` finds the lines, `recognize` reads them one by one; or, for an
 * engine that reads pages (P1), `segment` reads the whole page once and saves every line.
 * Each way of reading is its own part (./pageRead.ts, ./lineRecognition.ts), and how a read
 * ends, polished and committed in its own step, is shared (./imageReading.ts).
 */
export function createImageStages(kit: AttemptKit) {
  const { deps, pool } = kit;
  const ending = createReadEnding(kit);
  const { readWholePage } = createPageRead(kit, ending);
  const { recognizeLines } = createLineRecognition(kit, ending);

  /**
   * P7: after `segment` found the lines, the same activity reads them, and polishes when it
   * can: a fresh page's `recognize` and `polish` activities, their workflow tasks and their
   * loads of the page are saved. What a slice leaves, or a pause stops, goes to `recognize`.
   */
  async function readOn(
    ctx: AttemptContext,
    total: number,
    args?: SegmentArgs,
    loaded?: PageMedia,
  ): Promise<Segmented> {
    if (args?.maxMillis === undefined) return { total };
    const slice = { skip: args.skip ?? [], maxMillis: args.maxMillis, polish: args.polish };
    const outcome = await recognizeLines(ctx, slice, loaded);
    if (outcome.pause !== null || outcome.remaining > 0) return { total, partial: outcome };
    const { completed, failures, polished } = outcome;
    return ending.finished(ctx, args, total, { completed, failures, polished });
  }

  return {
    /**
     * T2 `segment`: finds the lines of an image page, unless a checkpoint or the page has them.
     * P1: an engine that reads whole pages reads a fresh page here in one pass, and its lines
     * are saved with their text in the same transaction as the segment checkpoint; `read`
     * then tells the workflow that nothing is left to recognize but the failed lines.
     * P7: with `maxMillis`, the lines found are then read here line by line (`readOn`).
     */
    async segmentPage(ref: AttemptRef, args?: SegmentArgs): Promise<Segmented> {
      return kit.withAttempt('engine', ref, async (ctx) => {
        const saved = await loadCheckpoints(pool, ref.jobId, 'segment');
        const segmented = payloadsOf(saved, 'segment').get(0);
        if (segmented) return readOn(ctx, segmented.lines.length, args);
        const loaded = await kit.pageMedia(ctx.pageId);
        const { media, page } = loaded;
        let lines = linesFromAnnotation(segmentsOf(page.annotationPage));
        if (lines.length === 0) {
          const provider = deps.providers.imageEngine(ctx.snapshot.provider);
          const call = kit.callContext(ctx, 'segment');
          if (provider.readPage && (provider.readsPages?.(call) ?? true)) {
            // The whole stage heartbeats, its saves and polish too: on a busy machine they
            // can outlast a heartbeat interval (T3).
            return kit.withHeartbeat(
              () => ({ stage: 'segment', read: 'page' }),
              () => readWholePage(ctx, provider, loaded, call, args ?? {}),
            );
          }
          await kit.guardBudget(ctx, { units: 1, unit: 'page' });
          const result = await kit.withHeartbeat(
            () => ({ stage: 'segment' }),
            () => provider.segmentPage(media, call),
          );
          await kit.ledger(ctx, 'segment', result.cost, 'ok');
          lines = result.lines;
        }
        await saveSegmentedLines(pool, ctx.fence, lines);
        return readOn(ctx, lines.length, args, loaded);
      });
    },

    /**
     * T2 `recognize` for image pages: the lines `segment` left, a slice of about `maxMillis`
     * at a time. Bounding by time keeps the workflow's view of progress fresh and a drain
     * short, whatever the engine's speed, with few activities per page.
     */
    async recognizeSegments(
      ref: AttemptRef,
      args: LineSlice & { maxSegments: number },
    ): Promise<SliceOutcome> {
      return kit.withAttempt('engine', ref, async (ctx) => {
        const outcome = await recognizeLines(ctx, args);
        return { ...outcome, committed: await ending.commitWhenDone(ctx, args, outcome) };
      });
    },
  };
}
