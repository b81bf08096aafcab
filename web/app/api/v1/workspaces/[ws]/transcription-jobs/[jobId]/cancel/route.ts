import { getJob } from '@quire/db/jobs';
import { ApiError, json, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool, quireClient } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; jobId: string };

/**
 * POST /api/v1/workspaces/{ws}/transcription-jobs/{jobId}/cancel (J5): the database first (the
 * running attempt's token dies), then the workflow. 409 when the job already ended.
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, { jobId }) => {
    if (jobId.length === 0 || jobId.length > 64)
      throw new ApiError(404, 'job_not_found', 'job not found');
    const client = await quireClient().catch(() => {
      throw new ApiError(
        503,
        'temporal_unavailable',
        'the workflow service does not answer; try again',
      );
    });
    await client.cancelJob(principal.workspaceId, jobId);
    const job = await getJob(pool(), principal.workspaceId, jobId);
    return json({ jobId, status: job?.status ?? 'canceled' });
  });
}
