'use server';
import { isOperatorKeyShape } from '@quire/core/operatorKeys';
import { authenticateOperatorKey } from '@quire/db/operatorKeys';
import { authenticateApiKey } from '@quire/db/workspaces';
import { refusalOf } from '@quire/web/lib/errors';
import { pool } from '@quire/web/lib/server';
import { endCurrentSession, startSession } from '@quire/web/lib/session';
import { clientAddress } from '@quire/web/lib/signin';
import { firstWorkspaceOf, signInWithPassword } from '@quire/web/services/people';
import { headers } from 'next/headers';
import { redirect } from 'next/navigation';

export interface SignInState {
  error: string | null;
}

/** R2: email and password (web/services/people.ts `signInWithPassword`). */
export async function signInWithPasswordAction(
  _previous: SignInState,
  form: FormData,
): Promise<SignInState> {
  const email = String(form.get('email') ?? '');
  const password = String(form.get('password') ?? '');
  if (!email.trim() || !password) return { error: 'Enter your email and password.' };
  let target: string;
  try {
    const account = await signInWithPassword({
      email,
      password,
      address: clientAddress(await headers()),
    });
    const workspaceId = await firstWorkspaceOf(account);
    await startSession({ accountId: account.id, workspaceId });
    target = account.operator ? '/operator' : workspaceId === null ? '/workspaces' : '/';
  } catch (error) {
    // R2: too_many_attempts and invalid_credentials; anything but a refusal is thrown on.
    return { error: refusalOf(error).message };
  }
  redirect(target);
}

/** An API key (integrators) or an operator key (automation) opens a session too. */
export async function signIn(_previous: SignInState, form: FormData): Promise<SignInState> {
  const key = String(form.get('apiKey') ?? '').trim();
  if (!key) return { error: 'Enter the API key of your workspace.' };
  if (isOperatorKeyShape(key)) {
    // M1: an operator key opens the operator view, never a workspace.
    const operator = await authenticateOperatorKey(pool(), key);
    if (!operator || !('operatorKeyId' in operator)) {
      return { error: 'That operator key is not valid.' };
    }
    await startSession({ operatorKeyId: operator.operatorKeyId });
    redirect('/operator');
  }
  const principal = await authenticateApiKey(pool(), key);
  if (!principal) return { error: 'That API key is not valid.' };
  await startSession({ apiKeyId: principal.actor.id, workspaceId: principal.workspaceId });
  // F4: an editor lands on the archive.
  redirect('/');
}

/** R3: the session row goes, so the cookie is worthless on every replica at once. */
export async function signOut(): Promise<void> {
  await endCurrentSession();
  redirect('/signin');
}
