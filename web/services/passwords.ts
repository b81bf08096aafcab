import 'server-only';
import { DomainError } from '@quire/core/errors';
import { hashPassword, normalizeEmail, passwordProblem } from '@quire/core/passwords';
import { findAccountByEmail } from '@quire/db/accounts';
import { createPasswordReset, redeemPasswordReset } from '@quire/db/passwordResets';
import { config, pool } from '@quire/web/lib/server';
import { sendMail } from '@quire/web/lib/smtp';

/**
 * R9: password resets by a link sent to the account's email, and the notice that a password
 * changed. X6: asking for a reset answers the same whether or not the email has an account;
 * only the mailbox learns.
 */

async function mail(to: string, subject: string, text: string): Promise<void> {
  const server = config().QUIRE_SMTP_URL;
  if (!server) return;
  await sendMail(server, { from: config().QUIRE_MAIL_FROM, to, subject, text });
}

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
  await mail(
    account.email,
    'Reset your Quire password',
    [
      'Someone asked to reset the password of your Quire account.',
      `Set a new one here (the link works once, for ${Math.round(config().QUIRE_PASSWORD_RESET_SECONDS / 60)} minutes):`,
      '',
      link,
      '',
      'If it was not you, ignore this message: your password stays as it is.',
    ].join('\n'),
  );
}

/** Sets the new password through the link; every session of the account ends; a notice goes out. */
export async function resetPassword(input: { token: string; password: string }): Promise<void> {
  if (!/^qr_[A-Za-z0-9_-]{43}$/.test(input.token)) throw new DomainError('reset_closed');
  const problem = passwordProblem(input.password);
  if (problem) throw new DomainError('weak_password', problem);
  const done = await redeemPasswordReset(pool(), input.token, await hashPassword(input.password));
  await mail(
    done.email,
    'Your Quire password was changed',
    'The password of your Quire account was just changed, and every session of it was signed out.\nIf it was not you, ask an operator to disable the account.',
  );
}
