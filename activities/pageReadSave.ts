import type { Checkpoint } from '../core/checkpoints';
import { billedProvider } from '../core/pricing';
import type { EngineIdentity, PageReading } from '../core/provider';
import { redactError } from '../core/redact';
import { saveCheckpoints } from '../db/checkpoints';
import { type CommitInput, commitPageRevision, failOnConflict } from '../db/commit';
import { lockRunningAttempt, type RunningAttempt } from '../db/fence';
import { recordProviderCall } from '../db/ledger';
import { type PoolClient, underSavepoint, withTransaction } from '../db/pool';
import { saveReadPage } from '../db/readPage';
import type { RevisionWriteOutcome } from '../db/revisions';
import type { AttemptContext, SegmentFailure } from './attemptContext';
import type { AttemptKit } from './attemptKit';
import type { PageMedia } from './imageReading';
import { commitInputOf, type PolishPass } from './transcriptStages';

/** A page as one engine pass read it, with the engine that read it. */
export type ReadPage = PageReading & { engine: EngineIdentity };

/**
 * P6: what a fresh read's save also writes, planned before the save: the polish pass made
 * (its ledger row), its texts (its checkpoint), and the checkpoints the commit reads.
 */
export interface CommitInRead {
  page: PageMedia['page'];
  checkpoints: Checkpoint[];
  outcome: { completed: number; failures: SegmentFailure[] };
  /** J3: the attempt polishes. */
  polish: boolean;
  pass?: PolishPass;
  texts: Record<string, string> | null;
}

/** P6: what a fresh read's save wrote after its lines: the polish, and the commit when made. */
export interface SavedInRead {
  completed: number;
  failures: SegmentFailure[];
  polished: boolean;
  commit?: { input: CommitInput; result: RevisionWriteOutcome };
}

/**
 * P1 + P6: a whole page's read saved in one transaction, composed here from db/ writers called
 * in order (none calls back up): the read, then the polish and the commit when planned.
 */
export function createPageReadSave(kit: AttemptKit) {
  const { deps, pool } = kit;

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

  return { saveRead };
}
