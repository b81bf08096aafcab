import type { JobProgress } from '@quire/client';
import { isActiveStatus } from '@quire/core/temporal';
import { getJob, listAttempts } from '@quire/db/jobs';
import { ApiError, json, type RouteContext, withApi } from '@quire/web/lib/api';
import { pool, quireClient } from '@quire/web/lib/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; jobId: string };

const LIVE_PROGRESS_TIMEOUT_MS = 2_000;

/** The workflow's own view of an active job (query), or undefined when it does not answer soon. */
async function liveProgress(jobId: string, workflowId: string): Promise<JobProgress | undefined> {
  try {
    const client = await quireClient();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), LIVE_PROGRESS_TIMEOUT_MS);
    });
    try {
      return await Promise.race([client.getProgress(jobId, workflowId), timeout]);
    } finally {
      clearTimeout(timer);
    }
  } catch {
    return undefined;
  }
}

/**
 * GET /api/v1/workspaces/{ws}/transcription-jobs/{jobId} (L1): the full job with its progress
 * and the ordered attempt audit. Attempt tokens are never selected, so they cannot leak.
 */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, { jobId }) => {
    if (jobId.length === 0 || jobId.length > 64)
      throw new ApiError('job_not_found', 'job not found');
    const job = await getJob(pool(), principal.workspaceId, jobId);
    if (!job) throw new ApiError('job_not_found', 'job not found');
    const [attempts, live] = await Promise.all([
      listAttempts(pool(), job.id),
      // A job waiting for a slot (M4) has no workflow to ask yet.
      isActiveStatus(job.status) && !job.awaitingSlot
        ? liveProgress(job.id, job.workflowId)
        : undefined,
    ]);
    return json({
      id: job.id,
      workflowId: job.workflowId,
      pageId: job.pageId,
      batchId: job.batchId,
      status: job.status,
      provider: job.provider,
      snapshot: {
        provider: job.snapshot.provider,
        model: job.snapshot.model,
        language: job.snapshot.language,
        options: job.snapshot.options,
        price: job.snapshot.price,
      },
      inputRevision: job.inputRevision,
      resultRevision: job.resultRevision,
      idempotencyKey: job.idempotencyKey,
      externalReferenceId: job.externalReferenceId,
      metadata: job.metadata,
      progress: {
        stage: live?.stage ?? job.stage,
        attemptNumber: live?.attemptNumber ?? job.lastAttemptNumber,
        completedSegments: live?.completedSegments ?? job.completedSegments,
        failedSegments: live?.failedSegments ?? job.failedSegments,
        totalSegments: live?.totalSegments ?? job.totalSegments,
        keptHumanLines: job.keptSegments,
        pausedReason: live?.pausedReason ?? null,
        waitingForSlot: job.awaitingSlot && job.status === 'pending',
        live: live !== undefined,
      },
      errorCategory: job.errorCategory,
      errorDetail: job.errorDetail,
      supersededBy: job.supersededBy,
      createdAt: job.createdAt.toISOString(),
      updatedAt: job.updatedAt.toISOString(),
      endedAt: job.endedAt?.toISOString() ?? null,
      attempts: attempts.map((a) => ({
        attemptNumber: a.attemptNumber,
        owner: a.owner,
        inputRevision: a.inputRevision,
        outcome: a.outcome,
        refunded: a.refunded,
        resultRevision: a.resultRevision,
        errorCategory: a.errorCategory,
        errorDetail: a.errorDetail,
        completedSegments: a.completedSegments,
        failedSegments: a.failedSegments,
        totalSegments: a.totalSegments,
        startedAt: a.startedAt.toISOString(),
        endedAt: a.endedAt?.toISOString() ?? null,
        durationMs: a.endedAt ? a.endedAt.getTime() - a.startedAt.getTime() : null,
      })),
    });
  });
}
