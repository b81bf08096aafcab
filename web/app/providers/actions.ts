'use server';
import { refusalOf } from '@quire/web/lib/errors';
import { requireAct } from '@quire/web/lib/session';
import { resumeProvider } from '@quire/web/services/providers';
import { refresh } from 'next/cache';

export interface ResumeState {
  error: string | null;
  resumed: string | null;
}

/** Q3, M3: a workspace's Resume of its own pause (web/services/providers.ts `resumeProvider`). */
export async function resumeProviderAction(
  _previous: ResumeState,
  form: FormData,
): Promise<ResumeState> {
  const principal = await requireAct('provider.resume');
  const name = String(form.get('provider') ?? '');
  try {
    await resumeProvider(principal, name);
  } catch (error) {
    return {
      error: refusalOf(error, 'The workflow service did not answer; try again.').message,
      resumed: null,
    };
  }
  refresh();
  return { error: null, resumed: name };
}
