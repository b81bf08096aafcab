'use server';
import { refusalOf } from '@quire/web/lib/errors';
import { requireAct } from '@quire/web/lib/session';
import { cancelJob, type EngineRequest, rerunJob } from '@quire/web/services/jobs';
import { refresh } from 'next/cache';
import { redirect } from 'next/navigation';

export interface JobActionState {
  error: string | null;
  done: string | null;
}

/** J5: cancel one job (web/services/jobs.ts `cancelJob`). */
export async function cancelJobAction(
  _previous: JobActionState,
  form: FormData,
): Promise<JobActionState> {
  const principal = await requireAct('job.cancel');
  try {
    await cancelJob(principal, String(form.get('jobId') ?? ''));
  } catch (error) {
    return {
      error: refusalOf(error, 'The job could not be canceled; try again.').message,
      done: null,
    };
  }
  refresh();
  return { error: null, done: 'Canceled.' };
}

/** V9: `provider|language` as the re-run form's select sends it; empty: the job's own. */
function engineRequestOf(value: FormDataEntryValue | null): EngineRequest {
  if (typeof value !== 'string' || !value.includes('|')) return {};
  const [provider, language] = value.split('|');
  return {
    ...(provider ? { provider } : {}),
    ...(language && language !== '*' ? { language } : {}),
  };
}

/** C2, V3: the re-run form's `humanLines` radio: `keep` or `replace`; absent: as the job was. */
function humanLinesOf(
  value: FormDataEntryValue | null,
): Pick<EngineRequest, 'overwriteHumanLines'> {
  if (value === 'keep') return { overwriteHumanLines: false };
  if (value === 'replace') return { overwriteHumanLines: true };
  return {};
}

/** Re-run a job's page with its provider (web/services/jobs.ts `rerunJob`), then show the new job. */
export async function rerunJobAction(
  _previous: JobActionState,
  form: FormData,
): Promise<JobActionState> {
  const principal = await requireAct('job.rerun');
  let newJobId: string;
  try {
    ({ jobId: newJobId } = await rerunJob(principal, String(form.get('jobId') ?? ''), {
      ...engineRequestOf(form.get('engine')),
      ...humanLinesOf(form.get('humanLines')),
    }));
  } catch (error) {
    return {
      error: refusalOf(error, 'The new job could not be started; try again.').message,
      done: null,
    };
  }
  redirect(`/jobs/${newJobId}`);
}
