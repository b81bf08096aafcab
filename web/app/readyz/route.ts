import { bearerOperatorKey } from '@quire/core/operatorKeys';
import { operationsFigures } from '@quire/db/console';
import { checkInstallationKey, installationKeyHeld } from '@quire/db/installationKey';
import { authenticateOperatorKey } from '@quire/db/operatorKeys';
import { pingDatabase } from '@quire/db/pool';
import { getProviderStates } from '@quire/db/providerState';
import { config, pool, temporal } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

async function check(work: () => Promise<unknown>): Promise<string> {
  try {
    await Promise.race([
      work(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timed out after 3 s')), 3_000)),
    ]);
    return 'ok';
  } catch (error) {
    return `unavailable: ${error instanceof Error ? error.message.split('\n')[0] : 'error'}`;
  }
}

/**
 * M1: the installation's figures behind readiness, for an operator key only (anyone else,
 * probes included, gets the status and the checks).
 */
async function operatorDetail(request: Request | undefined) {
  const key = bearerOperatorKey(request?.headers.get('authorization'));
  if (!key || !(await authenticateOperatorKey(pool(), key))) return undefined;
  const [queue, providers] = await Promise.all([
    operationsFigures(pool(), null),
    getProviderStates(pool()),
  ]);
  return {
    queue,
    pausedProviders: providers
      .filter((p) => p.status === 'paused')
      .map((p) => ({ provider: p.provider, reason: p.reason, since: p.paused_at })),
  };
}

/**
 * Readiness: Postgres and Temporal both answer, and this process holds the installation's
 * secret key (D1); 503 names the part that does not.
 */
export async function GET(request?: Request) {
  const [postgres, temporalStatus, secretKey] = await Promise.all([
    check(() => pingDatabase(pool())),
    check(async () => {
      const client = await temporal();
      await client.workflowService.describeNamespace({ namespace: config().TEMPORAL_NAMESPACE });
    }),
    check(async () => {
      const keys = config().QUIRE_SECRET_KEYS;
      let held = await installationKeyHeld(pool(), keys);
      // The first process to ask records its key, as a process start does.
      if (held === null) held = (await checkInstallationKey(pool(), keys)).ok;
      if (!held) throw new Error("QUIRE_SECRET_KEY is not the installation's key");
    }),
  ]);
  const ready = postgres === 'ok' && temporalStatus === 'ok' && secretKey === 'ok';
  const detail =
    postgres === 'ok' ? await operatorDetail(request).catch(() => undefined) : undefined;
  return Response.json(
    {
      status: ready ? 'ready' : 'unavailable',
      checks: { postgres, temporal: temporalStatus, secretKey },
      ...(detail ? { detail } : {}),
    },
    { status: ready ? 200 : 503 },
  );
}
