import { Context } from '@temporalio/activity';
import { segmentsOf } from '../core/annotation';
import { type Checkpoint, payloadsOf, readingCheckpoints } from '../core/checkpoints';
import { isPausing, ProviderError } from '../core/failures';
import { billedProvider } from '../core/pricing';
import type { CallContext, EngineIdentity, ImageEngine, PageReading } from '../core/provider';
import { describeProvider } from '../core/providerCatalogue';
import { redactError } from '../core/redact';
import { linesFromAnnotation, recognizedSegments } from '../core/transcript';
import { appendTaskEvent } from '../db/attempts';
import {
  loadCheckpoints,
  refreshRecognizeProgress,
  saveCheckpoints,
  saveSegmentCheckpoint,
  saveSegmentedLines,
} from '../db/checkpoints';
import { type CommitInput, commitPageRevision, failOnConflict } from '../db/commit';
import { lockRunningAttempt, type RunningAttempt } from '../db/fence';
import { recordProviderCall } from '../db/ledger';
import { type PoolClient, underSavepoint, withTransaction } from '../db/pool';
import { saveReadPage } from '../db/readPage';
import type { RevisionWriteOutcome } from '../db/revisions';
import {
  type AttemptContext,
  type AttemptRef,
  pauseFrom,
  type RecognizeOutcome,
  type SegmentFailure,
} from './attemptContext';
import type { AttemptKit } from './attemptKit';
import {
  commitAttempt,
  commitInputOf,
  type PolishPass,
  polishCheckpointed,
  polishPass,
  polishProviderOf,
  protectedLinesOf,
  settleCommit,
} from './transcriptStages';

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

type PageMedia = Awaited<ReturnType<AttemptKit['pageMedia']>>;

/** A page as one engine pass read it, with the engine that read it. */
type ReadPage = PageReading & { engine: EngineIdentity };

/**
 * P6: what a fresh read's save also writes, planned before the save: the polish pass made
 * (its ledger row), its texts (its checkpoint), and the checkpoints the commit reads.
 */
interface CommitInRead {
  page: PageMedia['page'];
  checkpoints: Checkpoint[];
  outcome: { completed: number; failures: SegmentFailure[] };
  /** J3: the attempt polishes. */
  polish: boolean;
  pass?: PolishPass;
  texts: Record<string, string> | null;
}

/** P6: what a fresh read's save wrote after its lines: the polish, and the commit when made. */
interface SavedInRead {
  completed: number;
  failures: SegmentFailure[];
  polished: boolean;
  commit?: { input: CommitInput; result: RevisionWriteOutcome };
}

/** A slice of a page's lines for one activity. */
interface LineSlice {
  maxSegments?: number;
  skip: number[];
  maxMillis?: number;
  polish?: boolean;
  commit?: boolean;
}

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

/** How often a long recognition refreshes the job's live counters (the console reads them). */
const PROGRESS_EVERY_MS = 500;

/**
 * T2 for image pages: `segment` finds the lines, `recognize` reads them one by one; or, for an
 * engine that reads pages (P1), `segment` reads the whole page once and saves every line.
 */
export function createImageStages(kit: AttemptKit) {
  const { deps, pool } = kit;

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
      return finished(ctx, args, total, outcome);
    }
    // Read back rather than trusted: a replayed save keeps what the first one wrote.
    const rows = await kit.untilSaved('read back', () => loadCheckpoints(pool, ctx.fence.jobId));
    const kept = payloadsOf(rows, 'segment').get(0)?.lines.length ?? total;
    const polished = args.polish === true && (await polishInline(ctx));
    return finished(ctx, args, kept, { ...readOutcome(kept, rows), polished });
  }

  /**
   * P1 + P6: the read's save, in one transaction: the read (its ledger row, its checkpoints,
   * `saveReadPage`), then, after a fresh save (not a replayed one) and when planned, the
   * polish and the commit (`writeCommitInRead`). Locked in the fence's order: the page when
   * committing, the job, then the attempt (db/fence.ts).
   */
  async function saveRead(
    ctx: AttemptContext,
    read: ReadPage,
    plan: CommitInRead | undefined,
  ): Promise<{ written?: SavedInRead }> {
    return withTransaction(pool, async (client) => {
      const attempt = plan
        ? await lockRunningAttempt(client, ctx.fence, 'UPDATE', { lockPage: true })
        : await lockRunningAttempt(client, ctx.fence, 'SHARE');
      const saved = await saveReadPage(client, ctx.fence, read, {
        workspaceId: ctx.workspaceId,
        by: billedProvider(ctx.snapshot, 'engine'),
        occurredAt: deps.now?.(),
      });
      if (!saved.saved || !plan) return {};
      return { written: await writeCommitInRead(ctx, client, attempt, plan) };
    });
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
    if (polish && !polishesInline(ctx)) return {};
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

  /**
   * P6: the polish's ledger row and checkpoint, then the commit, in the read's transaction,
   * which holds the page, the job and the attempt locked for update. The commit runs under a
   * savepoint, so that a commit that fails keeps the read and the polish (paid work) and
   * leaves the commit to its own step, as before.
   */
  async function writeCommitInRead(
    ctx: AttemptContext,
    client: PoolClient,
    attempt: RunningAttempt,
    plan: CommitInRead,
  ): Promise<SavedInRead> {
    const { pass, texts, outcome } = plan;
    const { fence } = ctx;
    if (pass) {
      await recordProviderCall(client, {
        by: pass.by,
        workspaceId: ctx.workspaceId,
        jobId: fence.jobId,
        attemptNumber: fence.attemptNumber,
        operation: 'polish',
        cost: pass.cost,
        outcome: pass.outcome,
        occurredAt: deps.now?.(),
      });
    }
    if (texts)
      await saveCheckpoints(client, fence, [{ stage: 'polish', seq: 0, payload: { texts } }]);
    // A polish asked for and not saved is left to the `polish` stage, as before.
    if (plan.polish && !texts) return { ...outcome, polished: false };
    const usePolish = texts !== null;
    const commit = await underSavepoint(client, async () => {
      const input = commitInputOf(kit, ctx, plan.checkpoints, plan.page, { usePolish });
      const result = await commitPageRevision(client, fence, attempt, input);
      if (result.state === 'conflict') await failOnConflict(client, fence, result);
      return { input, result };
    });
    if (commit.ok) return { ...outcome, polished: usePolish, commit: commit.value };
    deps.logger.warn(
      { jobId: fence.jobId, attempt: fence.attemptNumber, error: redactError(commit.error) },
      'commit in the read refused; the read is saved and the commit step runs',
    );
    return { ...outcome, polished: usePolish };
  }

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
      polished: last && args.polish === true && (await polishInline(ctx)),
    };
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
    return finished(ctx, args, total, { completed, failures, polished });
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
        return { ...outcome, committed: await commitWhenDone(ctx, args, outcome) };
      });
    },
  };
}
