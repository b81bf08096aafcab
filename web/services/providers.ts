import 'server-only';
import { awaitsOperator } from '@quire/core/failures';
import {
  credentialScope,
  enabledProviders,
  type ProviderDescription,
} from '@quire/core/providerCatalogue';
import { NotFoundError } from '@quire/db/errors';
import { resumeProviderRecorded } from '@quire/db/operatorControls';
import { getProviderStates, type ProviderStateRow } from '@quire/db/providerState';
import type { Principal } from '@quire/db/workspaces';
import { availableQuireClient, config, pool } from '@quire/web/lib/server';
import { actorOf, requireAction } from './access';

/**
 * Q3, M3: a workspace's Resume, through the typed client, which clears the pause and wakes the
 * workspace's workflows waiting on the provider. A workspace resumes only a provider on its own
 * credentials (catalogue scope `workspace`), and only its own pause of it; a provider on the
 * installation's shared credentials is resumed by operators alone, so here it is not found.
 */
export async function resumeProvider(
  principal: Principal,
  name: string,
): Promise<{ resumed: boolean; woken: number }> {
  requireAction(principal, 'provider.resume');
  const offered = enabledProviders(config()).some((entry) => entry.name === name);
  if (!offered || credentialScope(name) !== 'workspace') {
    throw new NotFoundError(
      'provider_not_found',
      'no provider of this workspace by that name; shared providers are resumed by operators',
    );
  }
  const client = await availableQuireClient();
  return resumeProviderRecorded(pool(), actorOf(principal), principal.workspaceId, name, () =>
    client.resumeProvider(name, principal.workspaceId),
  );
}

/** One provider's queue as a workspace sees it (Q3, M3). */
export interface ProviderQueue {
  name: string;
  /** Whose credentials its calls use: `installation` (shared) or `workspace` (each its own). */
  credentials: ProviderDescription['credentials'];
  status: ProviderStateRow['status'];
  reason: string | null;
  pausedAt: Date | null;
  resumeAt: Date | null;
  /** Paused until an operator resumes it (credit or auth on shared credentials). */
  needsOperator: boolean;
  /** This workspace may resume it: a pause of its own credentials. */
  resumable: boolean;
}

/**
 * The provider queues a workspace sees: every provider this installation offers (and any
 * with a recorded state), each with the pause that holds this workspace's jobs, if any: the
 * installation's, or the workspace's own. Other workspaces' own pauses are not shown (M1).
 */
export async function providerQueues(principal: Principal): Promise<ProviderQueue[]> {
  const states = await getProviderStates(pool(), principal.workspaceId);
  const offered = enabledProviders(config()).map((entry) => entry.name);
  const names = [...new Set([...offered, ...states.map((s) => s.provider)])].sort();
  return names.map((name) => {
    const rows = states.filter((s) => s.provider === name);
    const state = rows.find((s) => s.status === 'paused') ?? rows[0];
    const paused = state?.status === 'paused';
    const credentials = credentialScope(name);
    const own = paused && state?.workspace_id === principal.workspaceId;
    return {
      name,
      credentials,
      status: paused ? 'paused' : 'active',
      reason: paused ? (state?.reason ?? null) : null,
      pausedAt: paused ? (state?.paused_at ?? null) : null,
      resumeAt: paused ? (state?.resume_at ?? null) : null,
      needsOperator: paused && !own && awaitsOperator(state?.reason),
      resumable: own && credentials === 'workspace',
    };
  });
}
