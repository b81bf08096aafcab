import { json, type RouteContext, withApi } from '@quire/web/lib/api';
import { cancelJob } from '@quire/web/services/jobs';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; jobId: string };

/**
 * POST /api/v1/workspaces/{ws}/transcription-jobs/{jobId}/cancel (J5, web/services/jobs.ts):
 * 409 when the job already ended.
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, { jobId }) =>
    json(await cancelJob(principal, jobId)),
  );
}
