'use server';
import { refusalOf } from '@quire/web/lib/errors';
import { requestPasswordReset } from '@quire/web/services/passwords';

export interface ForgotState {
  error: string | null;
  sent: boolean;
}

/**
 * R9: a reset link is mailed to the address if an account has it. X6: the answer is the same
 * either way (web/services/passwords.ts); only a malformed address is refused.
 */
export async function requestResetAction(
  _previous: ForgotState,
  form: FormData,
): Promise<ForgotState> {
  try {
    await requestPasswordReset({ email: String(form.get('email') ?? '') });
    return { error: null, sent: true };
  } catch (error) {
    return { error: refusalOf(error).message, sent: false };
  }
}
