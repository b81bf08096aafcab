import 'server-only';
import { DomainError } from '@quire/core/errors';
import { hashPassword, normalizeEmail, passwordProblem } from '@quire/core/passwords';
import { findAccountByEmail, getAccount } from '@quire/db/accounts';
import {
  changeOwnPassword,
  createPasswordReset,
  redeemPasswordReset,
} from '@quire/db/passwordResets';
import { config, pool } from '@quire/web/lib/server';
import { type Letter, sendNotice } from './mail';
import { signInWithPassword } from './people';

/**
 * R9: password resets by a link sent to the account's email, a signed-in person changing
 * their own password, and the notice that a password changed. X6: asking for a reset answers
 * the same, and as soon, whether or not the email has an account; only the mailbox learns.
 */

const changedNotice = (to: string, how: string): Letter => ({
  to,
  subject: 'Your Quire password was changed',
  text: [
    `The password of your Quire account was just changed ${how}.`,
    'If it was not you, reset it from the sign-in page ("Forgot your password?"), or ask an operator to disable the account.',
  ].join('\n'),
});

export async function requestPasswordReset(input: { email: string }): Promise<void> {
  const email = normalizeEmail(input.email);
  if (!email) throw new DomainError('invalid_email');
  const account = await findAccountByEmail(pool(), email);
  if (!account || account.disabledAt) return;
  const token = await createPasswordReset(
    pool(),
    account.id,
    config().QUIRE_PASSWORD_RESET_SECONDS,
  );
  const link = `${config().QUIRE_PUBLIC_URL.replace(/\/$/, '')}/reset/${token}`;
  // Not awaited: the answer leaves as soon for an address without an account (X6).
  void sendNotice({
    to: account.email,
    subject: 'Reset your Quire password',
    text: [
      'Someone asked to reset the password of your Quire account.',
      `Set a new one here (the link works once, for ${Math.round(config().QUIRE_PASSWORD_RESET_SECONDS / 60)} minutes):`,
      '',
      link,
      '',
      'If it was not you, ignore this message: your password stays as it is.',
    ].join('\n'),
  });
}

/** Sets the new password through the link; every session of the account ends; a notice goes out. */
export async function resetPassword(input: { token: string; password: string }): Promise<void> {
  if (!/^qr_[A-Za-z0-9_-]{43}$/.test(input.token)) throw new DomainError('reset_closed');
  const problem = passwordProblem(input.password);
  if (problem) throw new DomainError('weak_password', problem);
  const done = await redeemPasswordReset(pool(), input.token, await hashPassword(input.password));
  await sendNotice(
    changedNotice(done.email, 'through a reset link, and every session of it was signed out'),
  );
}

/**
 * R9: a signed-in person sets a new password, proving the current one first (counted with
 * failed sign-ins, X4, so this form is no way around their limits). Their other sessions end;
 * the one they are using stays; a notice goes to the account's address.
 */
export async function changePassword(input: {
  accountId: number;
  sessionId: string;
  current: string;
  password: string;
  address: string;
}): Promise<{ endedSessions: number }> {
  const account = await getAccount(pool(), input.accountId);
  if (!account || account.disabledAt) throw new DomainError('account_not_found');
  const problem = passwordProblem(input.password);
  if (problem) throw new DomainError('weak_password', problem);
  try {
    await signInWithPassword({
      email: account.email,
      password: input.current,
      address: input.address,
    });
  } catch (error) {
    if (error instanceof DomainError && error.code === 'invalid_credentials') {
      throw new DomainError('wrong_password');
    }
    throw error;
  }
  const done = await changeOwnPassword(pool(), {
    accountId: account.id,
    keepSessionId: input.sessionId,
    passwordHash: await hashPassword(input.password),
  });
  await sendNotice(
    changedNotice(
      done.email,
      done.endedSessions > 0
        ? `from the console, and its ${done.endedSessions} other session(s) were signed out`
        : 'from the console',
    ),
  );
  return { endedSessions: done.endedSessions };
}
