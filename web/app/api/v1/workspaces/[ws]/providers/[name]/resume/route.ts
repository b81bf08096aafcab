import { json, type RouteContext, withApi } from '@quire/web/lib/api';
import { resumeProvider } from '@quire/web/services/providers';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; name: string };

/**
 * POST /api/v1/workspaces/{ws}/providers/{name}/resume (Q3, web/services/providers.ts): 404 for
 * a provider never heard of, 503 when the workflow service does not answer.
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, { name }) => {
    const { resumed, woken } = await resumeProvider(principal, name);
    return json({ provider: name, resumed, woken });
  });
}
