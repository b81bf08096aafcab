import { hashToken, newAttemptToken, sealToken } from '../core/attemptToken';
import type { FailureClass } from '../core/failures';
import type { MediaKind } from '../core/media';
import { billedProvider } from '../core/pricing';
import { pauseKey } from '../core/providerCatalogue';
import { attemptStepFinished } from '../db/attemptSteps';
import {
  claimAttempt as claimAttemptRow,
  closeAttempt as closeAttemptRow,
  pauseProvider as pauseProviderRow,
} from '../db/attempts';
import { lockRunningAttempt } from '../db/fence';
import { cancelJobIfActive } from '../db/jobs';
import { withTransaction } from '../db/pool';
import type { AttemptRef, PauseRequest } from './attemptContext';
import type { AttemptKit } from './attemptKit';
import { deleteEngineCopies } from './audioStages';

export type ClaimOutcome =
  | {
      state: 'claimed';
      ref: AttemptRef;
      kind: MediaKind;
      chargedAttempts: number;
    }
  | { state: 'inactive'; status: string; revision?: number | null }
  | { state: 'paused'; reason: FailureClass; resumeAtMs: number | null }
  | { state: 'exhausted'; category: FailureClass };

/** An attempt's life around its stages: claim (A1), close, pause (Q3), stage, cancel (J5). */
export function createAttemptActivities(kit: AttemptKit) {
  const { deps, pool } = kit;

  return {
    /** A1: claims the next attempt; the clear token never leaves this function but sealed. */
    async claimAttempt(input: {
      jobId: string;
      maxAttempts: number;
      /** D7: the attempt the workflow run last held; see db/attempts.ts claimAttempt. */
      knownAttempt?: number | null;
    }): Promise<ClaimOutcome> {
      return kit.guarded('db', undefined, async () => {
        // P8: no new bulk attempt starts here while a person's page runs (bounded).
        await kit.makeWay();
        // D1: a token sealed with a key the fleet does not hold could never be opened.
        await kit.assertFleetKey();
        const token = newAttemptToken();
        const claim = await claimAttemptRow(pool, {
          jobId: input.jobId,
          owner: deps.owner,
          tokenHash: hashToken(token),
          maxAttempts: input.maxAttempts,
          knownAttempt: input.knownAttempt,
          now: deps.now?.(),
        });
        switch (claim.state) {
          case 'claimed':
            // M5: in hand until the step that ends the attempt.
            kit.hand.take(input.jobId);
            deps.logger.info(
              { jobId: input.jobId, attempt: claim.attemptNumber },
              'attempt claimed',
            );
            return {
              state: 'claimed',
              ref: {
                jobId: input.jobId,
                attemptNumber: claim.attemptNumber,
                sealedToken: sealToken(token, deps.secretKey),
              },
              kind: claim.kind,
              chargedAttempts: claim.chargedAttempts,
            };
          case 'paused':
            return {
              state: 'paused',
              reason: claim.reason,
              resumeAtMs: kit.onWorkflowClock(claim.resumeAt),
            };
          default:
            return claim;
        }
      });
    },

    /**
     * J5 cleanup after the workflow was cancelled: records the cancel if it did not come
     * through the database first, and deletes any engine copy of the recording.
     */
    async cancelCleanup(input: {
      jobId: string;
      attemptNumber: number | null;
    }): Promise<{ jobStatus: string }> {
      return kit.guarded('db', undefined, async () => {
        const jobStatus = await cancelJobIfActive(pool, input.jobId);
        kit.hand.release(input.jobId);
        await deleteEngineCopies(kit, input.jobId);
        deps.logger.info(
          { jobId: input.jobId, attempt: input.attemptNumber, status: jobStatus },
          'job stopped',
        );
        return { jobStatus };
      });
    },

    /** Closes an attempt that commits nothing (retryable, permanent failure, or canceled). */
    async closeAttempt(
      ref: AttemptRef,
      args: {
        outcome: 'retryable_failed' | 'failed' | 'canceled';
        category: FailureClass | null;
        detail: string | null;
        counts?: { completed: number; failed: number; total: number | null };
        maxAttempts: number;
      },
    ): Promise<{ jobStatus: string }> {
      const fence = kit.fenceOf(ref);
      return kit.guarded('db', undefined, async () => {
        const close = {
          outcome: args.outcome,
          category: args.category,
          detail: args.detail,
          counts: args.counts,
        };
        const result = await withTransaction(pool, async (client) => {
          await lockRunningAttempt(client, fence, 'UPDATE');
          return closeAttemptRow(client, fence, close, args.maxAttempts);
        });
        kit.hand.release(ref.jobId);
        deps.logger.info(
          {
            jobId: ref.jobId,
            attempt: ref.attemptNumber,
            outcome: args.outcome,
            errorClass: args.category,
          },
          'attempt closed',
        );
        return result;
      });
    },

    /**
     * D7: an engine step the workflow heard of only as a timeout: did it finish its work on its
     * worker (saved, recorded in attempt_steps) while the attempt still runs? Then what went
     * missing was its report, lost to an outage of Temporal or PostgreSQL, and the attempt
     * resumes uncharged from its checkpoints; otherwise the worker died mid-step (T3).
     */
    async stepFinished(
      ref: AttemptRef,
      step: { runId: string; activityId: string; waitMs?: number },
    ): Promise<{ finished: boolean }> {
      return kit.guarded('db', undefined, async () => {
        // Its worker may be saving it this very moment, just back from the same outage.
        const deadline = Date.now() + Math.min(step.waitMs ?? 0, 15_000);
        for (;;) {
          const finished = await attemptStepFinished(pool, {
            runId: step.runId,
            activityId: step.activityId,
            jobId: ref.jobId,
            attemptNumber: ref.attemptNumber,
          });
          if (finished || Date.now() >= deadline) return { finished };
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      });
    },

    /** Q3: refunds the attempt and pauses the provider's queue; returns when it may reopen. */
    async pauseProvider(
      ref: AttemptRef,
      args: PauseRequest & { counts?: { completed: number; failed: number; total: number | null } },
    ): Promise<{ resumeAtMs: number | null; episode: number; newEpisode: boolean }> {
      return kit.withAttempt('db', ref, async (ctx) => {
        // M3: the provider whose call failed: the polish provider when polish failed.
        const { provider } = billedProvider(ctx.snapshot, args.stage ?? 'engine');
        const paused = await withTransaction(pool, async (client) => {
          const attempt = await lockRunningAttempt(client, ctx.fence, 'UPDATE');
          return pauseProviderRow(client, ctx.fence, attempt, {
            provider,
            reason: args.reason,
            detail: `provider ${provider} paused: ${args.reason}`,
            retryAfterMs: args.retryAfterMs ?? undefined,
            counts: args.counts,
            scope: args.scope,
            now: deps.now?.(),
          });
        });
        // The attempt is refunded: the job waits for the provider, not in this worker's hand.
        kit.hand.release(ref.jobId);
        if (paused.newEpisode) {
          await deps
            .onProviderPaused?.({
              provider,
              workspaceId: pauseKey(provider, ctx.workspaceId),
              reason: args.reason,
              episode: paused.episode,
            })
            .catch(() => {});
        }
        deps.logger.warn(
          {
            jobId: ref.jobId,
            provider,
            errorClass: args.reason,
            episode: paused.episode,
          },
          'provider paused',
        );
        return {
          resumeAtMs: kit.onWorkflowClock(paused.resumeAt),
          episode: paused.episode,
          newEpisode: paused.newEpisode,
        };
      });
    },
  };
}
