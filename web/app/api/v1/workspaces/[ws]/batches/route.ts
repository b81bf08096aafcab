import { type RouteContext, withApi } from '@quire/web/lib/api';
import { ingestAndStart } from '@quire/web/lib/ingest';
import { requireAction } from '@quire/web/services/access';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** POST /api/v1/workspaces/{ws}/batches: multipart ingest (U1-U4), one job per page. */
export async function POST(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    requireAction(principal, 'batch.create');
    return ingestAndStart(principal, request);
  });
}
