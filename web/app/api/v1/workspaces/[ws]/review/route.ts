import { json, type RouteContext, readQuery, withApi } from '@quire/web/lib/api';
import { reviewQuery } from '@quire/web/lib/schemas';
import { reviewQueue } from '@quire/web/services/review';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string };

/**
 * GET /api/v1/workspaces/{ws}/review (V2): lines not verified, lowest engine confidence first,
 * for the workspace or one item (`itemId`); keyset-paged with a signed token (L1). Each line
 * names the page revision it was read from, which a save of it names in If-Match (V4).
 */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal) => {
    const query = readQuery(request, reviewQuery);
    return json(await reviewQueue(principal, query), { headers: { 'Cache-Control': 'no-store' } });
  });
}
