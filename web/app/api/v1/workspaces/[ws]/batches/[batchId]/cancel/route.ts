import { json, type RouteContext, withApi } from '@quire/web/lib/api';
import { cancelBatch } from '@quire/web/services/jobs';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; batchId: string };

/** POST /api/v1/workspaces/{ws}/batches/{batchId}/cancel (J5, web/services/jobs.ts). */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, { batchId }) => {
    const { canceled, releasedPages } = await cancelBatch(principal, batchId);
    return json({ batchId, status: 'canceled', canceledJobs: canceled, releasedPages });
  });
}
