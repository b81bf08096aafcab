import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { parseConfig } from '../../core/config';
import { DomainError } from '../../core/errors';
import { hashPassword } from '../../core/passwords';
import { createAccount } from '../../db/accounts';
import { createSession, touchSession } from '../../db/sessions';
import type { MailSink } from '../../scripts/lib/mailSink';
import { configureWeb } from '../../web/lib/server';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startTestMailSink } from '../support/mailSink';

/**
 * R9 through web/services/passwords.ts, against a real PostgreSQL and a real SMTP sink
 * (Mailpit, read through its HTTP API): a reset link goes to the account's address, and
 * following it sets the password, ends the account's sessions and sends a notice; the link
 * works once. X6: asking for an address without an account answers the same and sends nothing.
 */
let db: TestDatabase;
let sink: MailSink;
const OLD = 'the old password of this account';
const NEW = 'a brand new password for the account';

const passwords = () => import('../../web/services/passwords');
const people = () => import('../../web/services/people');

beforeAll(async () => {
  db = await createTestDatabase();
  sink = await startTestMailSink();
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'reset-test-secret-key-0123456789abcdefghij',
      QUIRE_PUBLIC_URL: 'http://quire.test',
      QUIRE_SMTP_URL: sink.smtpUrl,
      QUIRE_MAIL_FROM: 'quire@quire.test',
    }),
  );
}, 900_000);

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await sink?.stop();
  await db?.drop();
});

const codeOf = async (work: Promise<unknown>) => {
  try {
    await work;
    return 'resolved';
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
};

describe('password reset by emailed link (R9)', () => {
  it('R9 a reset link goes to the address through SMTP; following it sets the password, ends every session and sends a notice; it works once', async () => {
    const { requestPasswordReset, resetPassword } = await passwords();
    const { signInWithPassword } = await people();
    const account = await createAccount(db.pool, CLI_ACTOR, {
      email: 'reader@reset.test',
      name: 'Rita Reader',
      passwordHash: await hashPassword(OLD),
    });
    const session = await createSession(
      db.pool,
      { accountId: account.id, workspaceId: null },
      3600,
    );
    await requestPasswordReset({ email: 'Reader@Reset.test' });
    const message = await sink.waitForMessage('reader@reset.test', /Reset your Quire password/);
    const link = /http:\/\/quire\.test\/reset\/(qr_[A-Za-z0-9_-]{43})/.exec(message.text);
    expect(link).not.toBeNull();
    await resetPassword({ token: link![1]!, password: NEW });
    const signIn = (password: string) =>
      codeOf(signInWithPassword({ email: account.email, password, address: '203.0.113.20' }));
    expect(await signIn(NEW)).toBe('resolved');
    expect(await signIn(OLD)).toBe('invalid_credentials');
    expect(await touchSession(db.pool, session, 3600)).toBeUndefined();
    await sink.waitForMessage('reader@reset.test', /password was changed/);
    expect(await codeOf(resetPassword({ token: link![1]!, password: OLD }))).toBe('reset_closed');
    const { rows } = await db.pool.query(
      'SELECT actor_account_id, after FROM audit_log WHERE action = $1 AND target = $2',
      ['account.password_reset', `accounts/${account.id}`],
    );
    expect(rows).toEqual([{ actor_account_id: account.id, after: { endedSessions: 1 } }]);
  });

  it('X6 R9 asking a reset for an address without an account answers the same and sends nothing', async () => {
    const { requestPasswordReset } = await passwords();
    await createAccount(db.pool, CLI_ACTOR, {
      email: 'known@reset.test',
      name: 'Known',
      passwordHash: await hashPassword(OLD),
    });
    expect(await codeOf(requestPasswordReset({ email: 'known@reset.test' }))).toBe('resolved');
    expect(await codeOf(requestPasswordReset({ email: 'unknown@reset.test' }))).toBe('resolved');
    await sink.waitForMessage('known@reset.test', /Reset/);
    expect(await sink.messagesTo('unknown@reset.test')).toEqual([]);
  });
});
