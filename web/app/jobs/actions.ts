'use server';
import { ConflictError, NotFoundError } from '@quire/db/errors';
import { getJob } from '@quire/db/jobs';
import { pool, quireClient } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import { refresh } from 'next/cache';
import { redirect } from 'next/navigation';

export interface JobActionState {
  error: string | null;
  done: string | null;
}

/** J5: cancel one job (database first, then its workflow), through the typed client. */
export async function cancelJobAction(
  _previous: JobActionState,
  form: FormData,
): Promise<JobActionState> {
  const principal = await requirePrincipal();
  const jobId = String(form.get('jobId') ?? '');
  try {
    const client = await quireClient();
    await client.cancelJob(principal.workspaceId, jobId);
  } catch (error) {
    if (error instanceof NotFoundError) return { error: 'That job does not exist.', done: null };
    if (error instanceof ConflictError)
      return { error: 'The job has already finished.', done: null };
    return { error: 'The job could not be canceled; try again.', done: null };
  }
  refresh();
  return { error: null, done: 'Canceled.' };
}

/**
 * Re-run: a new job for the same page, with the same provider, which supersedes any active
 * job of the page (J4) and reads the page's current revision.
 */
export async function rerunJobAction(
  _previous: JobActionState,
  form: FormData,
): Promise<JobActionState> {
  const principal = await requirePrincipal();
  const jobId = String(form.get('jobId') ?? '');
  const job = await getJob(pool(), principal.workspaceId, jobId);
  if (!job) return { error: 'That job does not exist.', done: null };
  let newJobId: string;
  try {
    const client = await quireClient();
    const started = await client.startJob({
      workspaceId: principal.workspaceId,
      pageId: job.pageId,
      provider: job.snapshot.provider,
      externalReferenceId: job.externalReferenceId ?? undefined,
    });
    newJobId = started.jobId;
  } catch {
    return { error: 'The new job could not be started; try again.', done: null };
  }
  redirect(`/jobs/${newJobId}`);
}
