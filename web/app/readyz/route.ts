import { checkInstallationKey, installationKeyHeld } from '@quire/db/installationKey';
import { pingDatabase } from '@quire/db/pool';
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
 * Readiness: Postgres and Temporal both answer, and this process holds the installation's
 * secret key (D1); 503 names the part that does not.
 */
export async function GET() {
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
  return Response.json(
    {
      status: ready ? 'ready' : 'unavailable',
      checks: { postgres, temporal: temporalStatus, secretKey },
    },
    { status: ready ? 200 : 503 },
  );
}
