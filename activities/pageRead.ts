import { Context } from '@temporalio/activity';
import { type Checkpoint, payloadsOf, readingCheckpoints } from '../core/checkpoints';
import { ProviderError } from '../core/failures';
import type { CallContext, ImageEngine } from '../core/provider';
import { recognizedSegments } from '../core/transcript';
import { loadCheckpoints } from '../db/checkpoints';
import type { AttemptContext, SegmentFailure } from './attemptContext';
import type { AttemptKit } from './attemptKit';
import type { PageMedia, ReadEnding, SegmentArgs, Segmented } from './imageReading';
import type { CommitInRead, ReadPage } from './pageReadSave';
import { createPageReadSave } from './pageReadSave';
import { type PolishPass, polishPass, settleCommit } from './transcriptStages';

/** J2: the lines of a page read in one pass that came back with text, and those that did not. */
function readOutcome(
  total: number,
  saved: readonly Checkpoint[],
): { completed: number; failures: SegmentFailure[] } {
  const read = payloadsOf(saved, 'recognize');
  const failures: SegmentFailure[] = [];
  for (let index = 0; index < total; index++) {
    // A line found but read empty is a failed line of this attempt.
    if (!read.has(index)) failures.push({ index, category: 'content' });
  }
  return { completed: read.size, failures };
}

/**
 * P1: the `segment` step of an engine that reads whole pages: one pass over a fresh page, its
 * polish and commit planned before the save (P6), then saved in one transaction (./pageReadSave.ts).
 */
export function createPageRead(kit: AttemptKit, ending: ReadEnding) {
  const { pool } = kit;
  const { saveRead } = createPageReadSave(kit);

  /**
   * P1: one engine pass over a fresh page, saved as the segment and line checkpoints at once.
   * P6: when the workflow asks for the commit and the read leaves nothing else to run, the
   * polish (the engine's own, offline) runs on the lines in memory, and the save writes the
   * polish and commits the page in its one transaction (`planCommitInRead`).
   */
  async function readWholePage(
    ctx: AttemptContext,
    provider: ImageEngine,
    loaded: PageMedia,
    call: CallContext,
    args: SegmentArgs,
  ): Promise<Segmented> {
    await kit.guardBudget(ctx, { units: 1, unit: 'page' });
    const reading = await provider.readPage!(loaded.media, call);
    const engine =
      reading.engine ??
      provider.identity(ctx.snapshot.model === 'default' ? undefined : ctx.snapshot.model);
    const read = { ...reading, engine };
    const total = reading.lines.length;
    const inOne = args.commit ? await planCommitInRead(ctx, loaded.page, read, args) : {};
    // D7: the page is read; an outage of our own database now waits instead of losing it.
    const saved = await kit.untilSaved('save read page', () => saveRead(ctx, read, inOne.plan));
    if (inOne.error !== undefined) throw inOne.error;
    if (saved.written) {
      const { commit, ...outcome } = saved.written;
      if (commit) {
        const committed = settleCommit(kit, ctx, commit.input, commit.result);
        return { total, read: { ...outcome, committed } };
      }
      // A polish still to run, or a commit refused in the save (its writes undone, the read
      // and the polish kept): the commit is left to its own step or run here, as before.
      return ending.finished(ctx, args, total, outcome);
    }
    // Read back rather than trusted: a replayed save keeps what the first one wrote.
    const rows = await kit.untilSaved('read back', () => loadCheckpoints(pool, ctx.fence.jobId));
    const kept = payloadsOf(rows, 'segment').get(0)?.lines.length ?? total;
    const polished = args.polish === true && (await ending.polishInline(ctx));
    return ending.finished(ctx, args, kept, { ...readOutcome(kept, rows), polished });
  }

  /**
   * P6: what the read's save also writes after a fresh read when the workflow asked for the
   * commit: the polish pass (run here, before the save) and the checkpoints the commit reads.
   * No plan where the read cannot commit as it stands (no line read; a polish that is not the
   * engine's own offline pass): the save is the read alone. An error of the polish (a cancel,
   * a bug) is returned, to be thrown once the read is saved.
   */
  async function planCommitInRead(
    ctx: AttemptContext,
    page: PageMedia['page'],
    read: ReadPage,
    args: SegmentArgs,
  ): Promise<{ plan?: CommitInRead; error?: unknown }> {
    const { segment, recognized } = readingCheckpoints(ctx.fence.attemptNumber, read);
    if (recognized.length === 0 && read.lines.length > 0) return {};
    const polish = args.polish === true;
    if (polish && !ending.polishesInline(ctx)) return {};
    const checkpoints: Checkpoint[] = [segment, ...recognized];
    const outcome = readOutcome(read.lines.length, checkpoints);
    let pass: PolishPass | undefined;
    if (polish) {
      try {
        pass = await polishPass(kit, ctx, recognizedSegments(checkpoints), page.kind);
      } catch (error) {
        if (!(error instanceof ProviderError) || Context.current().cancellationSignal.aborted)
          return { error };
        // Refused before any call (the budget, B1): the `polish` stage decides, as before.
        return { plan: { page, checkpoints, outcome, polish, texts: null } };
      }
    }
    const texts = pass?.outcome === 'ok' ? pass.texts : null;
    const attemptNumber = ctx.fence.attemptNumber;
    if (texts) checkpoints.push({ stage: 'polish', seq: 0, attemptNumber, payload: { texts } });
    return { plan: { page, checkpoints, outcome, polish, pass, texts } };
  }

  return { readWholePage };
}
