import { Context } from '@temporalio/activity';
import { type Segment, segmentsOf } from '../core/annotation';
import { type Checkpoint, payloadsOf } from '../core/checkpoints';
import { type FailureClass, ProviderError } from '../core/failures';
import { overwritesHumanLines } from '../core/jobOptions';
import { humanLineIndexes } from '../core/lineStates';
import { type BilledProvider, billedProvider } from '../core/pricing';
import type { CallCost } from '../core/provider';
import {
  assembleTranscript,
  polishedTexts,
  polishInput,
  recognizedSegments,
} from '../core/transcript';
import { recordProgress } from '../db/attempts';
import { loadCheckpoints, saveCheckpoints } from '../db/checkpoints';
import {
  type CommitInput,
  commitPageRevision,
  committedRevision,
  failOnConflict,
} from '../db/commit';
import { type AttemptFence, lockRunningAttempt } from '../db/fence';
import { type PageRow, readAttemptPage } from '../db/pages';
import { type Pool, withTransaction } from '../db/pool';
import type { RevisionConflict, RevisionWriteOutcome } from '../db/revisions';
import type { AttemptContext, AttemptRef } from './attemptContext';
import type { AttemptKit } from './attemptKit';

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
  const { pool } = kit;
  const saved = await loadCheckpoints(pool, ctx.fence.jobId);
  if (payloadsOf(saved, 'polish').has(0)) return true;
  const recognized = recognizedSegments(saved);
  if (recognized.length === 0) return false;
  const page = await readAttemptPage(pool, ctx.pageId);
  await recordProgress(pool, ctx.fence, { stage: 'polish' });
  const pass = await polishPass(kit, ctx, recognized, page.kind);
  // A refused call is recorded under the provider that refused it, like a paid one.
  await kit.ledger(ctx, 'polish', pass.cost, pass.outcome, pass.by);
  if (pass.outcome !== 'ok') throw pass.error;
  if (!pass.texts) return false;
  const texts = pass.texts;
  await kit.untilSaved('save polish', () =>
    withTransaction(pool, async (client) => {
      await lockRunningAttempt(client, ctx.fence, 'SHARE');
      await saveCheckpoints(client, ctx.fence, [{ stage: 'polish', seq: 0, payload: { texts } }]);
    }),
  );
  return true;
}

/** One polish call, and what its ledger row records; a refusal is returned, not thrown. */
export type PolishPass = { by: BilledProvider } & (
  | { outcome: 'ok'; cost: CallCost; texts: Record<string, string> | null }
  | { outcome: FailureClass; cost: null; error: ProviderError }
);

/**
 * The polish call itself, within the budget (B1), heartbeating: the engine's own (offline,
 * deterministic) polish, or a model pass through another provider named in the job's
 * options, e.g. `{ polishProvider: "openai-chat" }`: then priced, recorded and, on a pausing
 * failure, paused under that one (M3). `texts` is null when the pass changed the number of
 * lines, which cannot be mapped back. Any error but the provider's refusal of the call is
 * thrown, a refusal by the budget (no call made) too.
 */
export async function polishPass(
  kit: AttemptKit,
  ctx: AttemptContext,
  recognized: readonly Segment[],
  kind: 'image' | 'audio',
): Promise<PolishPass> {
  const by = billedProvider(ctx.snapshot, 'polish');
  const provider = kit.deps.providers.get(by.provider);
  await kit.guardBudget(ctx, { units: 1, unit: 'call' }, by);
  try {
    const result = await kit.withHeartbeat(
      () => ({ stage: 'polish' }),
      () => provider.polish(polishInput(recognized), kind, kit.callContext(ctx, 'polish')),
    );
    return { by, outcome: 'ok', cost: result.cost, texts: polishedTexts(recognized, result.text) };
  } catch (error) {
    if (!(error instanceof ProviderError) || Context.current().cancellationSignal.aborted)
      throw error;
    return { by, outcome: error.category, cost: null, error };
  }
}

/**
 * J1 + J2: builds the transcript from the checkpoints (failed segments keep their previous
 * text) and commits it in one fenced transaction; a CAS miss fails the job `conflict`. Run by
 * the `commit` step; the engine step whose read left nothing else to do commits in its own
 * save instead (P6, activities/pageReadSave.ts).
 */
export async function commitAttempt(
  kit: AttemptKit,
  ctx: AttemptContext,
  args: { usePolish: boolean },
): Promise<RevisionWriteOutcome> {
  const { pool } = kit;
  // D11: a commit retried after its reply was lost finds its attempt completed; the
  // checkpoints it was built from went with the commit, so nothing is built again.
  const replayed = await committedRevision(pool, ctx.fence);
  if (replayed) {
    kit.hand.release(ctx.fence.jobId);
    return replayed;
  }
  const saved = await loadCheckpoints(pool, ctx.fence.jobId);
  const page = await readAttemptPage(pool, ctx.pageId);
  const input = commitInputOf(kit, ctx, saved, page, args);
  const result = await commitPage(pool, ctx.fence, input);
  if (result.state === 'conflict') await failJobOnConflict(pool, ctx.fence, result);
  return settleCommit(kit, ctx, input, result);
}

/**
 * J1: the commit in a transaction of its own, locked in the fence's order (page, job,
 * attempt); a retry after a lost reply finds its own attempt completed and writes nothing.
 */
export async function commitPage(
  pool: Pool,
  fence: AttemptFence,
  input: CommitInput,
): Promise<RevisionWriteOutcome> {
  return withTransaction(pool, async (client) => {
    const replayed = await committedRevision(client, fence);
    if (replayed) return replayed;
    const attempt = await lockRunningAttempt(client, fence, 'UPDATE', { lockPage: true });
    return commitPageRevision(client, fence, attempt, input);
  });
}

/** J1: the job failed `conflict` after a commit's miss, in a transaction of its own. */
export async function failJobOnConflict(
  pool: Pool,
  fence: AttemptFence,
  conflict: RevisionConflict,
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await lockRunningAttempt(client, fence, 'UPDATE');
    await failOnConflict(client, fence, conflict);
  });
}

/**
 * The transcript a commit writes, from the attempt's checkpoints over the page's lines. The
 * page may be read before the commit's lock: the commit is a compare-and-set from the
 * attempt's input revision, so a page that moved on since fails the job `conflict` whichever
 * of its versions was read.
 */
export function commitInputOf(
  kit: AttemptKit,
  ctx: AttemptContext,
  saved: readonly Checkpoint[],
  page: PageRow,
  args: { usePolish: boolean },
): CommitInput {
  const previous = segmentsOf(page.annotationPage);
  const { segments, completed, total, kept } = assembleTranscript(saved, previous, {
    ...args,
    protectedLines: protectedLinesOf(ctx, previous),
  });
  // Provenance: the engine that read the page in one pass (P1), as saved with its lines;
  // otherwise this worker's engine for the job's provider.
  const engine =
    payloadsOf(saved, 'segment').get(0)?.engine ??
    kit.deps.providers
      .get(ctx.snapshot.provider)
      .identity(ctx.snapshot.model === 'default' ? undefined : ctx.snapshot.model);
  return {
    segments,
    completed,
    failed: total - completed,
    total,
    kept,
    engine,
    // V8: the polish pass keeps every line to itself; the reading text joins hyphenated words.
    ...(page.kind === 'image' ? { lineText: 'diplomatic' as const } : {}),
    canvasUri: page.canvasUri,
  };
}

/** After a commit has landed, committed or failed on a conflict: the attempt has ended. */
export function settleCommit(
  kit: AttemptKit,
  ctx: AttemptContext,
  input: CommitInput,
  result: RevisionWriteOutcome,
): RevisionWriteOutcome {
  const { jobId, attemptNumber } = ctx.fence;
  // M5: the page leaves this process's hand.
  kit.hand.release(jobId);
  if (result.state === 'conflict') {
    kit.deps.logger.warn({ jobId, attempt: attemptNumber, errorClass: 'conflict' }, 'page changed');
    return result;
  }
  const { completed, total, kept } = input;
  kit.deps.logger.info(
    { jobId, attempt: attemptNumber, revision: result.revision, completed, total, kept },
    'transcript committed',
  );
  return result;
}

/** The stages every page ends with: `polish` the recognized text, `commit` the transcript. */
export function createTranscriptStages(kit: AttemptKit) {
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
    async commitTranscript(
      ref: AttemptRef,
      args: { usePolish: boolean },
    ): Promise<RevisionWriteOutcome> {
      return kit.withAttempt('db', ref, (ctx) => commitAttempt(kit, ctx, args));
    },
  };
}
