import { Context } from '@temporalio/activity';
import { ProviderError } from '../core/failures';
import { describeProvider } from '../core/providerCatalogue';
import type { RevisionWriteOutcome } from '../db/revisions';
import type { AttemptContext, RecognizeOutcome, SegmentFailure } from './attemptContext';
import type { AttemptKit } from './attemptKit';
import { commitAttempt, polishCheckpointed, polishProviderOf } from './transcriptStages';

/** What `segment` is asked (the workflow's options for the attempt). */
export interface SegmentArgs {
  /** J3: whether this attempt polishes. */
  polish?: boolean;
  /**
   * P7: read the lines in this activity too, for about this long, as `recognize` would. A run
   * that passes none leaves them to its `recognize` stage.
   */
  maxMillis?: number;
  /** Lines this attempt has failed already (J2): not tried again in it. */
  skip?: number[];
  /**
   * P6: commit in this activity too when the read leaves nothing else to do (every line
   * tried, one at least read, the polish done here if asked): no commit step of its own.
   */
  commit?: boolean;
}

export interface Segmented {
  total: number;
  /** Every line was tried here (P1 in one pass, P7 line by line): no `recognize` stage. */
  read?: {
    completed: number;
    failures: SegmentFailure[];
    polished: boolean;
    committed?: RevisionWriteOutcome;
  };
  /** P7: lines were read here, but some are left for `recognize`, or a pause stopped them. */
  partial?: SliceOutcome;
}

/**
 * One slice of a page's lines, as `segment` and `recognize` report it; `polished` says the
 * polish ran in the same activity (absent from results recorded before P7).
 */
export type SliceOutcome = RecognizeOutcome & {
  polished?: boolean;
  committed?: RevisionWriteOutcome;
};

/** A slice of a page's lines for one activity. */
export interface LineSlice {
  maxSegments?: number;
  skip: number[];
  maxMillis?: number;
  polish?: boolean;
  commit?: boolean;
}

export type PageMedia = Awaited<ReturnType<AttemptKit['pageMedia']>>;

/** How a read of an image page ends, whichever step read it: `createReadEnding`. */
export type ReadEnding = ReturnType<typeof createReadEnding>;

/**
 * What the image steps share once the lines are read, whole page or line by line: the polish
 * in the read's own step when it can run there, and the commit when nothing is left to do.
 */
export function createReadEnding(kit: AttemptKit) {
  /**
   * Polish in the read's own activity, saving one activity per page, when the polisher is the
   * job's own offline engine (its pass is short and deterministic). A polisher named in the
   * job's options, a remote one, or any failure, leaves it to the `polish` stage, which pauses
   * or degrades as it always does: a call that can fail by credit or outage is made once, there
   * (M3), not tried here first and recorded twice.
   */
  async function polishInline(ctx: AttemptContext): Promise<boolean> {
    if (!polishesInline(ctx)) return false;
    try {
      return await polishCheckpointed(kit, ctx);
    } catch (error) {
      if (error instanceof ProviderError && !Context.current().cancellationSignal.aborted) {
        return false;
      }
      throw error;
    }
  }

  /** Whether the job's polisher is its own offline engine, whose pass runs in the read's step. */
  function polishesInline(ctx: AttemptContext): boolean {
    const polisher = polishProviderOf(ctx);
    return polisher === ctx.snapshot.provider && describeProvider(polisher)?.location === 'local';
  }

  /**
   * P6: the commit, in the engine step whose read left nothing else to do, when the workflow
   * asked for it: the attempt's commit step, its workflow task's round and its loads are
   * saved. A read the workflow would not commit as it stands (no line read, a polish still to
   * run) is left to the workflow, as before. Like every save after paid work, it waits out an
   * outage of Quire's own database (D7); a commit is idempotent, so a retry after a lost reply
   * finds its own revision.
   */
  async function commitWhenDone(
    ctx: AttemptContext,
    args: { commit?: boolean; polish?: boolean },
    read: {
      total: number;
      completed: number;
      polished: boolean;
      remaining?: number;
      pause?: unknown;
    },
  ): Promise<RevisionWriteOutcome | undefined> {
    if (!args.commit || (read.remaining ?? 0) > 0 || (read.pause ?? null) !== null)
      return undefined;
    if (read.completed === 0 && read.total > 0) return undefined;
    if (args.polish === true && !read.polished) return undefined;
    return kit.untilSaved('commit', () => commitAttempt(kit, ctx, { usePolish: read.polished }));
  }

  /** A read of every line, committed here when it can be (`commitWhenDone`). */
  async function finished(
    ctx: AttemptContext,
    args: { commit?: boolean; polish?: boolean },
    total: number,
    read: { completed: number; failures: SegmentFailure[]; polished: boolean },
  ): Promise<Segmented> {
    const committed = await commitWhenDone(ctx, args, { total, ...read });
    return { total, read: { ...read, committed } };
  }

  return { polishInline, polishesInline, commitWhenDone, finished };
}
