import 'server-only';
import { DomainError } from '@quire/core/errors';
import { config } from '@quire/web/lib/server';
import { sendMail } from '@quire/web/lib/smtp';

/**
 * R9: the installation's mail (invitations, password resets, notices) through its SMTP server
 * (QUIRE_SMTP_URL). A message that must arrive for the act to mean anything (an invitation:
 * its link goes nowhere else) refuses the act when no server is configured; a notice is sent
 * when one is.
 */
export interface Letter {
  to: string;
  subject: string;
  text: string;
}

export function mailServer(): string {
  const server = config().QUIRE_SMTP_URL;
  if (!server) throw new DomainError('mail_not_configured');
  return server;
}

/** Sends now; a refusal of the server is `mail_failed` (the message is never in the error). */
export async function sendLetter(letter: Letter): Promise<void> {
  const server = mailServer();
  try {
    await sendMail(server, { from: config().QUIRE_MAIL_FROM, ...letter });
  } catch (error) {
    console.error(
      JSON.stringify({ msg: 'mail not sent', subject: letter.subject, error: String(error) }),
    );
    throw new DomainError('mail_failed');
  }
}

/**
 * A notice sent when a server is configured, without holding the answer: X6, the person who
 * asked waits no longer for an address that has an account (and gets mail) than for one that
 * has none. A failure is logged (the subject, never the recipient or the text).
 */
export function sendNotice(letter: Letter): Promise<void> {
  if (!config().QUIRE_SMTP_URL) return Promise.resolve();
  return sendLetter(letter).catch(() => {});
}
