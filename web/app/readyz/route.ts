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

/** Readiness: Postgres and Temporal both answer; 503 names the part that does not. */
export async function GET() {
  const [postgres, temporalStatus] = await Promise.all([
    check(() => pingDatabase(pool())),
    check(async () => {
      const client = await temporal();
      await client.workflowService.describeNamespace({ namespace: config().TEMPORAL_NAMESPACE });
    }),
  ]);
  const ready = postgres === 'ok' && temporalStatus === 'ok';
  return Response.json(
    { status: ready ? 'ready' : 'unavailable', checks: { postgres, temporal: temporalStatus } },
    { status: ready ? 200 : 503 },
  );
}
