import { json, type RouteContext, readQuery, withApi } from '@quire/web/lib/api';
import { progressQuery } from '@quire/web/lib/schemas';
import { reviewProgress } from '@quire/web/services/review';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string };

/** GET /api/v1/workspaces/{ws}/progress (V5): lines by state and fully verified pages. */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal) => {
    const query = readQuery(request, progressQuery);
    return json(await reviewProgress(principal, query.itemId), {
      headers: { 'Cache-Control': 'no-store' },
    });
  });
}
