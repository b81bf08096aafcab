import { decodePageToken, encodePageToken } from '@quire/core/pageToken';
import { type JobSummary, listJobSummaries } from '@quire/db/jobList';
import {
  ApiError,
  json,
  type RouteContext,
  readJson,
  readQuery,
  withApi,
} from '@quire/web/lib/api';
import { listJobsQuery, startJobBody } from '@quire/web/lib/schemas';
import { config, pool } from '@quire/web/lib/server';
import { startJob } from '@quire/web/services/jobs';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string };

/**
 * POST /api/v1/workspaces/{ws}/transcription-jobs: starts a job through the typed Temporal
 * client (recorded, then its workflow started; J4 supersedes the page's active job, J6 returns
 * the same job for a repeated idempotency key).
 */
export async function POST(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal) => {
    const body = await readJson(request, startJobBody);
    const started = await startJob(principal, body);
    return json(
      {
        jobId: started.jobId,
        workflowId: started.workflowId,
        status: started.status,
        created: started.created,
      },
      { status: 202, headers: { Location: `${new URL(request.url).pathname}/${started.jobId}` } },
    );
  });
}

function toSummaryJson(job: JobSummary) {
  return { ...job, createdAt: job.createdAt.toISOString(), updatedAt: job.updatedAt.toISOString() };
}

/**
 * GET /api/v1/workspaces/{ws}/transcription-jobs (L1): newest first, keyset-paged by job id
 * (time-ordered), summaries only. The page token is signed and bound to the workspace and the
 * filter, so it cannot be edited or reused elsewhere.
 */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal) => {
    const query = readQuery(request, listJobsQuery);
    const binding = {
      workspaceId: principal.workspaceId,
      scope: 'transcription-jobs',
      filter: { status: query.status, pageId: query.pageId, batchId: query.batchId },
    };
    const secret = config().QUIRE_SECRET_KEY;
    let beforeId: string | undefined;
    if (query.pageToken !== undefined) {
      const cursor = decodePageToken(secret, binding, query.pageToken);
      if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 64) {
        throw new ApiError('invalid_page_token', 'page token is malformed');
      }
      beforeId = cursor;
    }
    const rows = await listJobSummaries(pool(), principal.workspaceId, {
      status: query.status,
      pageId: query.pageId,
      batchId: query.batchId,
      beforeId,
      limit: query.pageSize + 1,
    });
    const jobs = rows.slice(0, query.pageSize);
    const last = jobs[jobs.length - 1];
    const nextPageToken =
      rows.length > query.pageSize && last ? encodePageToken(secret, binding, last.id) : null;
    return json({ jobs: jobs.map(toSummaryJson), nextPageToken });
  });
}
