import { KNOWN_PROVIDERS } from '@quire/core/pricing';
import { getProviderStates } from '@quire/db/attempts';
import { ApiError, json, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool, quireClient } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; name: string };

/**
 * POST /api/v1/workspaces/{ws}/providers/{name}/resume (Q3): an operator's Resume, through the
 * typed client, which clears the pause and wakes every workflow waiting on the provider.
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (_principal, { name }) => {
    const known =
      KNOWN_PROVIDERS.includes(name) ||
      (await getProviderStates(pool())).some((s) => s.provider === name);
    if (!known) throw new ApiError(404, 'provider_not_found', 'provider not found');
    const client = await quireClient().catch(() => {
      throw new ApiError(
        503,
        'temporal_unavailable',
        'the workflow service does not answer; try again',
      );
    });
    const { resumed, woken } = await client.resumeProvider(name);
    return json({ provider: name, resumed, woken });
  });
}
