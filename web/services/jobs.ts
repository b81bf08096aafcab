import 'server-only';
import type { StartedJob, StartJobRequest } from '@quire/client';
import { overwritesHumanLines } from '@quire/core/jobOptions';
import { recordAudit } from '@quire/db/auditLog';
import { NotFoundError } from '@quire/db/errors';
import { getJob } from '@quire/db/jobs';
import type { Principal } from '@quire/db/workspaces';
import { availableQuireClient, pool, quireClient } from '@quire/web/lib/server';
import { actorOf, requireAction } from './access';

/** Acts on transcription jobs and batches, for the API and the console alike. */

const jobNotFound = () => new NotFoundError('job_not_found', 'job not found');

/**
 * Starts a job through the typed client. V3: a job told to overwrite the lines people edited
 * or verified is recorded in the audit log once it exists, with who asked.
 */
export async function startJob(
  principal: Principal,
  input: Omit<StartJobRequest, 'workspaceId'>,
): Promise<StartedJob> {
  requireAction(principal, 'job.start');
  const client = await availableQuireClient();
  const started = await client.startJob({ ...input, workspaceId: principal.workspaceId });
  if (started.created) {
    // R10: every job started is in the audit log with who started it.
    await recordAudit(pool(), actorOf(principal), {
      action: 'job.start',
      target: `transcription-jobs/${started.jobId}`,
      workspaceId: principal.workspaceId,
      before: null,
      after: { jobId: started.jobId, pageId: input.pageId, provider: input.provider ?? null },
    });
  }
  if (started.created && overwritesHumanLines(input.options)) {
    await recordAudit(pool(), actorOf(principal), {
      action: 'job.overwrite_human_lines',
      target: `transcription-jobs/${started.jobId}`,
      workspaceId: principal.workspaceId,
      before: null,
      after: { jobId: started.jobId, pageId: input.pageId, overwriteHumanLines: true },
    });
  }
  return started;
}

/**
 * J5: the database first (the running attempt's token dies), then the workflow. A job that
 * already ended is a `ConflictError` (`job_not_active`).
 */
export async function cancelJob(
  principal: Principal,
  jobId: string,
): Promise<{ jobId: string; status: string }> {
  requireAction(principal, 'job.cancel');
  if (jobId.length === 0 || jobId.length > 64) throw jobNotFound();
  const client = await availableQuireClient();
  const before = await getJob(pool(), principal.workspaceId, jobId);
  await client.cancelJob(principal.workspaceId, jobId);
  const job = await getJob(pool(), principal.workspaceId, jobId);
  // M4: every cancel is in the audit log, recorded once it has taken effect.
  await recordAudit(pool(), actorOf(principal), {
    action: 'job.cancel',
    target: `transcription-jobs/${jobId}`,
    workspaceId: principal.workspaceId,
    before: { status: before?.status ?? null },
    after: { status: job?.status ?? 'canceled' },
  });
  return { jobId, status: job?.status ?? 'canceled' };
}

/**
 * V9: the engine and language a person picks for a re-run; absent: the job's own. C2, V3:
 * whether the lines people edited or verified are kept (absent: as the job was asked) or
 * replaced by the engine's reading.
 */
export interface EngineRequest {
  provider?: string;
  language?: string;
  overwriteHumanLines?: boolean;
}

/**
 * Re-run: a new job for the same page with the same request (provider, model, language,
 * options, caller's reference and metadata), which supersedes any active job of the page
 * (J4) and reads the page's current revision. V9: a person may pick another engine and
 * language; a language with no installed model is refused before anything starts.
 */
export async function rerunJob(
  principal: Principal,
  jobId: string,
  choice: EngineRequest = {},
): Promise<{ jobId: string }> {
  requireAction(principal, 'job.rerun');
  const job = await getJob(pool(), principal.workspaceId, jobId);
  if (!job) throw jobNotFound();
  const client = await availableQuireClient();
  const sameEngine = choice.provider === undefined || choice.provider === job.snapshot.provider;
  const options =
    choice.overwriteHumanLines === undefined
      ? job.snapshot.options
      : { ...job.snapshot.options, overwriteHumanLines: choice.overwriteHumanLines };
  const started = await client.startJob({
    workspaceId: principal.workspaceId,
    pageId: job.pageId,
    provider: choice.provider ?? job.snapshot.provider,
    // The model belongs to the engine: another engine reads with its own default.
    model: sameEngine ? job.snapshot.model : undefined,
    language: choice.language ?? job.snapshot.language,
    options,
    externalReferenceId: job.externalReferenceId ?? undefined,
    metadata: job.metadata,
    // P8: a person asked for this page again and waits for it.
    priority: 'interactive',
  });
  await recordAudit(pool(), actorOf(principal), {
    action: 'job.rerun',
    target: `transcription-jobs/${jobId}`,
    workspaceId: principal.workspaceId,
    before: { jobId, status: job.status },
    after: { jobId: started.jobId, status: started.status },
  });
  if (overwritesHumanLines(options)) {
    // V3: a re-run that replaces people's lines is on the record with who asked, as at start.
    await recordAudit(pool(), actorOf(principal), {
      action: 'job.overwrite_human_lines',
      target: `transcription-jobs/${started.jobId}`,
      workspaceId: principal.workspaceId,
      before: null,
      after: { jobId: started.jobId, pageId: job.pageId, overwriteHumanLines: true },
    });
  }
  return { jobId: started.jobId };
}

/** J5: every active job of the batch in one transaction, then their workflows. */
export async function cancelBatch(
  principal: Principal,
  batchId: string,
): Promise<{ canceled: number; releasedPages: number }> {
  requireAction(principal, 'batch.cancel');
  const client = await quireClient();
  try {
    const result = await client.cancelBatch(principal.workspaceId, batchId);
    await recordAudit(pool(), actorOf(principal), {
      action: 'batch.cancel',
      target: `batches/${batchId}`,
      workspaceId: principal.workspaceId,
      before: null,
      after: result,
    });
    return result;
  } catch (error) {
    if (error instanceof NotFoundError) throw new NotFoundError(error.code, 'batch not found');
    throw error;
  }
}
