import { hashToken, newAttemptToken, sealToken } from '../core/attemptToken';
import type { FailureClass } from '../core/failures';
import type { MediaKind } from '../core/media';
import { claimAttempt as claimAttemptRow, closeAttempt as closeAttemptRow } from '../db/attempts';
import { lockRunningAttempt } from '../db/fence';
import { cancelJobIfActive } from '../db/jobs';
import { withTransaction } from '../db/pool';
import type { AttemptRef } from './attemptContext';
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

/**
 * An attempt's life around its stages: claim (A1), close, cancel (J5). A provider's pause (Q3)
 * is in ./providerPause.ts, the step an outage hid (D7) in ./attemptSteps.ts.
 */
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
  };
}
