'use server';
import { refusalOf } from '@quire/web/lib/errors';
import { resetPassword } from '@quire/web/services/passwords';
import { redirect } from 'next/navigation';

export interface ResetState {
  error: string | null;
}

/** R9: the emailed link's form sets the new password; every session of the account ends. */
export async function resetPasswordAction(
  _previous: ResetState,
  form: FormData,
): Promise<ResetState> {
  const password = String(form.get('password') ?? '');
  if (password !== String(form.get('confirm') ?? '')) {
    return { error: 'The two passwords differ; type the same one twice.' };
  }
  try {
    await resetPassword({ token: String(form.get('token') ?? ''), password });
  } catch (error) {
    return { error: refusalOf(error).message };
  }
  redirect('/signin?changed=1');
}
