import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { parseConfig, type QuireConfig } from '../../core/config';
import { DomainError } from '../../core/errors';
import { hashPassword } from '../../core/passwords';
import type { Principal, Role } from '../../core/roles';
import { createAccount, membershipsOf, putMember } from '../../db/accounts';
import { createSession, touchSession } from '../../db/sessions';
import { createWorkspace } from '../../db/workspaces';
import type { MailSink } from '../../scripts/lib/mailSink';
import { configureWeb } from '../../web/lib/server';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startTestMailSink } from '../support/mailSink';

/**
 * R9, X2, X6 through web/services/people.ts and web/services/passwords.ts, against a real
 * PostgreSQL and a real SMTP sink (Mailpit, read through its HTTP API): an invitation's link
 * goes only to the invited address, and sets nothing until the person there follows it; the
 * owner's answer is the same for an address with an account and one without; a signed-in
 * person changes their own password and is sent a notice.
 */
let db: TestDatabase;
let sink: MailSink;
let settings: QuireConfig;
let wsA: number;
let wsB: number;
const PASSWORD = 'correct horse battery staple';
const people = () => import('../../web/services/people');
const passwords = () => import('../../web/services/passwords');

const codeOf = async (work: Promise<unknown>) => {
  try {
    await work;
    return 'resolved';
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
};

async function person(
  email: string,
  memberships: Array<{ ws: number; role: Role }> = [],
  operator = false,
) {
  const account = await createAccount(db.pool, CLI_ACTOR, {
    email,
    name: email.split('@')[0]!,
    passwordHash: await hashPassword(PASSWORD),
    operator,
  });
  for (const m of memberships) {
    await putMember(db.pool, CLI_ACTOR, { workspaceId: m.ws, accountId: account.id, role: m.role });
  }
  return account;
}

const ownerOf = (account: { id: number; name: string }, ws: number): Principal => ({
  workspaceId: ws,
  actor: { kind: 'account', id: account.id, name: account.name },
  grant: { kind: 'role', role: 'owner' },
});

const linkIn = (text: string) =>
  /http:\/\/quire\.test\/invite\/(qi_[A-Za-z0-9_-]{43})/.exec(text)?.[1];

beforeAll(async () => {
  db = await createTestDatabase();
  sink = await startTestMailSink();
  settings = parseConfig({
    DATABASE_URL: db.url,
    QUIRE_SECRET_KEY: 'mail-test-secret-key-0123456789abcdefghijk',
    QUIRE_PUBLIC_URL: 'http://quire.test',
    QUIRE_SMTP_URL: sink.smtpUrl,
    QUIRE_MAIL_FROM: 'quire@quire.test',
  });
  configureWeb(settings);
  wsA = (await createWorkspace(db.pool, 'Mail A')).workspace.id;
  wsB = (await createWorkspace(db.pool, 'Mail B')).workspace.id;
}, 900_000);

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await sink?.stop();
  await db?.drop();
});

describe('invitations by email (R9, X2)', () => {
  it('R9 X2 an invitation goes by email to its address only: the answer carries no link, nothing is made until the person there follows it and chooses a password, and the link gives its own membership and nothing more', async () => {
    // The inviting owner is an operator and an owner of another workspace too: none of it passes.
    const boss = await person(
      'boss@mail.test',
      [
        { ws: wsA, role: 'owner' },
        { ws: wsB, role: 'owner' },
      ],
      true,
    );
    const { inviteMember, acceptInvitationLink, signInWithPassword } = await people();
    const answer = await inviteMember(ownerOf(boss, wsA), {
      email: 'New.Person@Mail.test',
      role: 'reviewer',
    });
    expect(Object.keys(answer).sort()).toEqual(['email', 'expiresAt', 'invitationId']);
    expect(JSON.stringify(answer)).not.toContain('qi_');
    const none = await db.pool.query('SELECT 1 FROM accounts WHERE email = $1', [
      'new.person@mail.test',
    ]);
    expect(none.rows).toEqual([]);

    const message = await sink.waitForMessage('new.person@mail.test', /invited to Mail A/);
    expect(message.text).toContain('as reviewer');
    const token = linkIn(message.text);
    expect(token).toBeDefined();
    const joined = await acceptInvitationLink({
      token: token!,
      name: 'New Person',
      password: 'a password the person chose',
      address: '203.0.113.30',
    });
    expect(joined).toMatchObject({ workspaceId: wsA, role: 'reviewer' });
    expect(joined.account.operator).toBe(false);
    expect(await membershipsOf(db.pool, joined.account.id)).toEqual([
      expect.objectContaining({ workspaceId: wsA, role: 'reviewer' }),
    ]);
    expect(
      await codeOf(
        signInWithPassword({
          email: 'new.person@mail.test',
          password: 'a password the person chose',
          address: '203.0.113.30',
        }),
      ),
    ).toBe('resolved');
  });

  it('X6 inviting an address that has an account answers exactly as inviting one that has none, in about the same time, and both get the same message', async () => {
    const owner = await person('owner-x6@mail.test', [{ ws: wsA, role: 'owner' }]);
    const { inviteMember } = await people();
    const known: number[] = [];
    const unknown: number[] = [];
    const answers = new Set<string>();
    const timed = async (email: string, into: number[]) => {
      const started = performance.now();
      const answer = await inviteMember(ownerOf(owner, wsA), { email, role: 'viewer' });
      into.push(performance.now() - started);
      const { invitationId: _, expiresAt: __, email: to, ...rest } = answer;
      answers.add(JSON.stringify({ ...rest, to: to.replace(/^\w+-\d/, 'x') }));
    };
    for (let i = 0; i < 5; i += 1) {
      await person(`known-${i}@mail.test`);
      await timed(`known-${i}@mail.test`, known);
      await timed(`unknown-${i}@mail.test`, unknown);
    }
    expect(answers.size).toBe(1);
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[2]!;
    const [k, u] = [median(known), median(unknown)];
    expect(Math.abs(k - u)).toBeLessThan(Math.max(50, 0.5 * Math.max(k, u)));
    const shape = (text: string) => text.replace(/qi_[A-Za-z0-9_-]{43}/, 'LINK');
    const toKnown = await sink.waitForMessage('known-0@mail.test', /invited/);
    const toUnknown = await sink.waitForMessage('unknown-0@mail.test', /invited/);
    expect(shape(toKnown.text)).toBe(shape(toUnknown.text));
    expect(toKnown.subject).toBe(toUnknown.subject);
  });

  it('R9 with no mail server an invitation is refused mail_not_configured, and nothing is made', async () => {
    const owner = await person('owner-nomail@mail.test', [{ ws: wsA, role: 'owner' }]);
    const { inviteMember } = await people();
    configureWeb({ ...settings, QUIRE_SMTP_URL: undefined });
    try {
      expect(
        await codeOf(
          inviteMember(ownerOf(owner, wsA), { email: 'nomail@mail.test', role: 'viewer' }),
        ),
      ).toBe('mail_not_configured');
    } finally {
      configureWeb(settings);
    }
    const { rows } = await db.pool.query('SELECT 1 FROM invitations WHERE email = $1', [
      'nomail@mail.test',
    ]);
    expect(rows).toEqual([]);
  });
});

describe('people change their own password (R9)', () => {
  it('R9 a signed-in person changes their password with the current one: a wrong one is wrong_password and changes nothing; then the new one works, the old does not, their other sessions end, this one stays, and a notice arrives', async () => {
    const account = await person('changer@mail.test', [{ ws: wsA, role: 'editor' }]);
    const here = await createSession(db.pool, { accountId: account.id, workspaceId: wsA }, 3600);
    const elsewhere = await createSession(
      db.pool,
      { accountId: account.id, workspaceId: wsA },
      3600,
    );
    const { changePassword } = await passwords();
    const { signInWithPassword } = await people();
    const NEW = 'a new password of my own choosing';
    const change = (current: string, password: string) =>
      codeOf(
        changePassword({
          accountId: account.id,
          sessionId: here,
          current,
          password,
          address: '203.0.113.31',
        }),
      );
    expect(await change('not my password', NEW)).toBe('wrong_password');
    expect(await change(PASSWORD, 'short')).toBe('weak_password');
    expect(await touchSession(db.pool, elsewhere, 3600)).toBeDefined();
    expect(await sink.messagesTo('changer@mail.test')).toEqual([]);

    expect(await change(PASSWORD, NEW)).toBe('resolved');
    const signIn = (password: string) =>
      codeOf(signInWithPassword({ email: account.email, password, address: '203.0.113.32' }));
    expect(await signIn(NEW)).toBe('resolved');
    expect(await signIn(PASSWORD)).toBe('invalid_credentials');
    expect(await touchSession(db.pool, here, 3600)).toBeDefined();
    expect(await touchSession(db.pool, elsewhere, 3600)).toBeUndefined();
    const notice = await sink.waitForMessage('changer@mail.test', /password was changed/);
    expect(notice.text).toContain('1 other session');
    expect(notice.text).not.toContain(NEW);
    const { rows } = await db.pool.query(
      'SELECT actor_account_id, after FROM audit_log WHERE action = $1 AND target = $2',
      ['account.password_change', `accounts/${account.id}`],
    );
    expect(rows).toEqual([{ actor_account_id: account.id, after: { endedSessions: 1 } }]);
  });
});
