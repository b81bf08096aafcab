import { billedProvider } from '../core/pricing';
import { pauseKey } from '../core/providerCatalogue';
import { pauseProvider as pauseProviderRow } from '../db/attempts';
import { lockRunningAttempt } from '../db/fence';
import { withTransaction } from '../db/pool';
import type { AttemptRef, PauseRequest } from './attemptContext';
import type { AttemptKit } from './attemptKit';

/** Q3: an attempt stopped by its provider's credit or outage pauses that provider's queue. */
export function createProviderPause(kit: AttemptKit) {
  const { deps, pool } = kit;

  return {
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
