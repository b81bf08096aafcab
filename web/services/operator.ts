import 'server-only';
import type { Actor } from '@quire/core/actor';
import { KNOWN_PROVIDERS } from '@quire/core/providerCatalogue';
import { NotFoundError } from '@quire/db/errors';
import {
  type InstallationControls,
  resumeProviderRecorded,
  setInstallationControls,
  setWorkspaceControls,
  type WorkspaceControls,
} from '@quire/db/operatorControls';
import type { OperatorPrincipal } from '@quire/db/operatorKeys';
import { getProviderStates } from '@quire/db/providerState';
import { availableQuireClient, pool, quireClient } from '@quire/web/lib/server';

/**
 * M4: what an operator does, for the operator API and the console's operator view alike. The
 * change and its audit row commit together (db/operatorControls.ts, which the admin CLI calls
 * too); the operator's key id is the actor.
 */
export const operatorActor = (
  operator: OperatorPrincipal,
): Actor & { kind: 'account' | 'operatorKey' } =>
  'accountId' in operator
    ? { kind: 'account', id: operator.accountId, name: operator.name }
    : { kind: 'operatorKey', id: operator.operatorKeyId };

export async function changeWorkspaceControls(
  operator: OperatorPrincipal,
  workspaceId: number,
  change: Partial<WorkspaceControls>,
): Promise<WorkspaceControls> {
  const controls = await setWorkspaceControls(pool(), operatorActor(operator), workspaceId, change);
  if (change.activeJobCap !== undefined) {
    // The worker's dispatcher was notified at commit; starting here too saves a round trip.
    // Best effort: the dispatcher and the reconciler cover a Temporal that does not answer.
    await quireClient()
      .then((client) => client.dispatchWaitingJobs(workspaceId))
      .catch(() => {});
  }
  return controls;
}

export function changeInstallationControls(
  operator: OperatorPrincipal,
  change: Partial<InstallationControls>,
): Promise<InstallationControls> {
  return setInstallationControls(pool(), operatorActor(operator), change);
}

/** Q3/M1: an operator's Resume of a paused provider, for every workspace it holds. */
export async function resumeProviderAsOperator(
  operator: OperatorPrincipal,
  name: string,
): Promise<{ resumed: boolean; woken: number }> {
  const known =
    KNOWN_PROVIDERS.includes(name) ||
    (await getProviderStates(pool())).some((s) => s.provider === name);
  if (!known) throw new NotFoundError('provider_not_found', 'provider not found');
  const client = await availableQuireClient();
  return resumeProviderRecorded(pool(), operatorActor(operator), null, name, () =>
    client.resumeProvider(name),
  );
}
