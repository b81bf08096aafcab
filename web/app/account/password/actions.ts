'use server';
import { refusalOf } from '@quire/web/lib/errors';
import { currentSession, SESSION_COOKIE } from '@quire/web/lib/session';
import { clientAddress } from '@quire/web/lib/signin';
import { changePassword } from '@quire/web/services/passwords';
import { cookies, headers } from 'next/headers';

export interface ChangePasswordState {
  error: string | null;
  done: string | null;
}

/** R9: a signed-in person changes their own password, giving the current one. */
export async function changePasswordAction(
  _previous: ChangePasswordState,
  form: FormData,
): Promise<ChangePasswordState> {
  const session = await currentSession();
  const sessionId = (await cookies()).get(SESSION_COOKIE)?.value;
  if (session?.kind !== 'account' || !sessionId) {
    return { error: 'Sign in first.', done: null };
  }
  const password = String(form.get('password') ?? '');
  if (password !== String(form.get('confirm') ?? '')) {
    return { error: 'The two new passwords differ; type the same one twice.', done: null };
  }
  try {
    const { endedSessions } = await changePassword({
      accountId: session.accountId,
      sessionId,
      current: String(form.get('current') ?? ''),
      password,
      address: clientAddress(await headers()),
    });
    return {
      error: null,
      done: `Password changed.${endedSessions > 0 ? ` Your ${endedSessions} other session(s) were signed out.` : ''} A notice went to your email.`,
    };
  } catch (error) {
    return { error: refusalOf(error).message, done: null };
  }
}
