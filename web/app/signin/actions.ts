'use server';
import { isOperatorKeyShape } from '@quire/core/operatorKeys';
import { authenticateOperatorKey } from '@quire/db/operatorKeys';
import { authenticateApiKey } from '@quire/db/workspaces';
import { config, pool } from '@quire/web/lib/server';
import {
  operatorSessionValue,
  SESSION_COOKIE,
  sessionCookieOptions,
  sessionCookieSecure,
  sessionValue,
} from '@quire/web/lib/session';
import { cookies, headers } from 'next/headers';
import { redirect } from 'next/navigation';

export interface SignInState {
  error: string | null;
}

export async function signIn(_previous: SignInState, form: FormData): Promise<SignInState> {
  const key = String(form.get('apiKey') ?? '').trim();
  if (!key) return { error: 'Enter the API key of your workspace.' };
  const proto = (await headers()).get('x-forwarded-proto');
  if (isOperatorKeyShape(key)) {
    // M1: an operator key opens the operator view, never a workspace.
    const operator = await authenticateOperatorKey(pool(), key);
    if (!operator) return { error: 'That operator key is not valid.' };
    (await cookies()).set(
      SESSION_COOKIE,
      operatorSessionValue(operator),
      sessionCookieOptions(sessionCookieSecure(config().QUIRE_PUBLIC_URL, proto)),
    );
    redirect('/operator');
  }
  const principal = await authenticateApiKey(pool(), key);
  if (!principal) return { error: 'That API key is not valid.' };
  (await cookies()).set(
    SESSION_COOKIE,
    sessionValue(principal),
    sessionCookieOptions(sessionCookieSecure(config().QUIRE_PUBLIC_URL, proto)),
  );
  // F4: an editor lands on the archive.
  redirect('/');
}

export async function signOut(): Promise<void> {
  (await cookies()).delete(SESSION_COOKIE);
  redirect('/signin');
}
