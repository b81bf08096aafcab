'use server';
import { KNOWN_PROVIDERS } from '@quire/core/pricing';
import { getProviderStates } from '@quire/db/attempts';
import { pool, quireClient } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import { refresh } from 'next/cache';

export interface ResumeState {
  error: string | null;
  resumed: string | null;
}

/** Q3: an operator's Resume through the typed client (clears the pause, wakes waiting jobs). */
export async function resumeProviderAction(
  _previous: ResumeState,
  form: FormData,
): Promise<ResumeState> {
  await requirePrincipal();
  const name = String(form.get('provider') ?? '');
  const known =
    KNOWN_PROVIDERS.includes(name) ||
    (await getProviderStates(pool())).some((s) => s.provider === name);
  if (!known) return { error: 'That provider is not known.', resumed: null };
  try {
    const client = await quireClient();
    await client.resumeProvider(name);
  } catch {
    return { error: 'The workflow service did not answer; try again.', resumed: null };
  }
  refresh();
  return { error: null, resumed: name };
}
