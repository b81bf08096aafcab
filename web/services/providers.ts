import 'server-only';
import { KNOWN_PROVIDERS } from '@quire/core/providerCatalogue';
import { NotFoundError } from '@quire/db/errors';
import { resumeProviderRecorded } from '@quire/db/operatorControls';
import { getProviderStates } from '@quire/db/providerState';
import type { Principal } from '@quire/db/workspaces';
import { availableQuireClient, pool } from '@quire/web/lib/server';

/**
 * Q3: an operator's Resume, through the typed client, which clears the pause and wakes every
 * workflow waiting on the provider. Providers are shared by all workspaces, so any signed-in
 * principal may resume one.
 */
export async function resumeProvider(
  principal: Principal,
  name: string,
): Promise<{ resumed: boolean; woken: number }> {
  const known =
    KNOWN_PROVIDERS.includes(name) ||
    (await getProviderStates(pool())).some((s) => s.provider === name);
  if (!known) throw new NotFoundError('provider_not_found', 'provider not found');
  const client = await availableQuireClient();
  return resumeProviderRecorded(
    pool(),
    { kind: 'workspace', keyId: principal.apiKeyId },
    principal.workspaceId,
    name,
    () => client.resumeProvider(name),
  );
}
