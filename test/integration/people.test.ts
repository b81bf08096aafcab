import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { parseConfig } from '../../core/config';
import { DomainError } from '../../core/errors';
import { hashPassword } from '../../core/passwords';
import type { Principal, Role } from '../../core/roles';
import { createAccount, putMember } from '../../db/accounts';
import { listInvitations } from '../../db/invitations';
import { createOperatorKey } from '../../db/operatorKeys';
import { createSession, touchSession } from '../../db/sessions';
import { createWorkspace } from '../../db/workspaces';
import type { MailSink } from '../../scripts/lib/mailSink';
import { configureWeb } from '../../web/lib/server';
import { call, type RouteModule } from '../support/api';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startTestMailSink } from '../support/mailSink';

/**
 * R1, R3 through web/services/people.ts and the operator routes, against a real PostgreSQL:
 * an operator disabling an account ends every session of it at once and is audited with the
 * operator as actor, an operator cannot disable themself, the accounts list is searched and
 * paged; an owner revokes a pending invitation, whose link then fails with
 * `invitation_revoked` and changes nothing, and only owners may.
 */
let db: TestDatabase;
let sink: MailSink;
let wsA: number;
let wsB: number;
let keyA: string;
let operatorKey: string;
let operatorKeyId: number;
let operatorAccount: { accountId: number; name: string };
const PASSWORD = 'correct horse battery staple';
let counter = 0;

const people = () => import('../../web/services/people');
const accountsRoute = (): Promise<RouteModule> =>
  import('../../web/app/api/v1/operator/accounts/route');
const accountRoute = (): Promise<RouteModule> =>
  import('../../web/app/api/v1/operator/accounts/[accountId]/route');

async function person(email: string, memberships: Array<{ ws: number; role: Role }> = []) {
  const account = await createAccount(db.pool, CLI_ACTOR, {
    email,
    name: email.split('@')[0]!,
    passwordHash: await hashPassword(PASSWORD),
  });
  for (const m of memberships) {
    await putMember(db.pool, CLI_ACTOR, { workspaceId: m.ws, accountId: account.id, role: m.role });
  }
  return account;
}

async function memberPrincipal(ws: number, role: Role): Promise<Principal> {
  counter += 1;
  const account = await person(`${role}-${counter}@people.test`, [{ ws, role }]);
  return {
    workspaceId: ws,
    actor: { kind: 'account', id: account.id, name: account.name },
    grant: { kind: 'role', role },
  };
}

const codeOf = async (work: Promise<unknown>) => {
  try {
    await work;
    return 'resolved';
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
};

const auditRows = async (action: string, target: string) =>
  (
    await db.pool.query(
      `SELECT actor_kind, actor_account_id, actor_key_id, actor_name, workspace_id, after
         FROM audit_log WHERE action = $1 AND target = $2 ORDER BY id`,
      [action, target],
    )
  ).rows;

/** What a refused act could have written: accounts, sessions, members, invitations, audit. */
async function footprint(): Promise<string> {
  const { rows } = await db.pool.query(`SELECT
      (SELECT count(*) FROM audit_log) AS audit,
      (SELECT count(*) FROM accounts) AS accounts,
      (SELECT count(*) FROM accounts WHERE disabled_at IS NOT NULL) AS disabled,
      (SELECT count(*) FROM sessions) AS sessions,
      (SELECT count(*) FROM workspace_members) AS members,
      (SELECT count(*) FROM invitations WHERE revoked_at IS NOT NULL) AS revoked,
      (SELECT count(*) FROM invitations WHERE accepted_at IS NOT NULL) AS accepted`);
  return JSON.stringify(rows[0]);
}

/** R9: an owner's invitation, and its link's token as the invited address received it. */
async function invite(owner: Principal, email: string, role: Role) {
  const made = await (await people()).inviteMember(owner, { email, role });
  const message = await sink.waitForMessage(email, /invited/);
  const token = /http:\/\/quire\.test\/invite\/(qi_[A-Za-z0-9_-]{43})/.exec(message.text)?.[1];
  if (!token) throw new Error(`no invitation link in the message to ${email}`);
  return { ...made, token };
}

beforeAll(async () => {
  db = await createTestDatabase();
  sink = await startTestMailSink();
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'people-test-secret-key-0123456789abcdefgh',
      QUIRE_PUBLIC_URL: 'http://quire.test',
      QUIRE_SMTP_URL: sink.smtpUrl,
    }),
  );
  const a = await createWorkspace(db.pool, 'People A');
  wsA = a.workspace.id;
  keyA = a.apiKey;
  wsB = (await createWorkspace(db.pool, 'People B')).workspace.id;
  const made = await createOperatorKey(db.pool, CLI_ACTOR, 'people test');
  operatorKey = made.key;
  operatorKeyId = made.id;
  const op = await createAccount(db.pool, CLI_ACTOR, {
    email: 'operator@people.test',
    name: 'Olga Operator',
    passwordHash: null,
    operator: true,
  });
  operatorAccount = { accountId: op.id, name: op.name };
}, 900_000);

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await sink?.stop();
  await db?.drop();
});

describe('operators disable accounts (R3)', () => {
  it('R3 an operator disabling an account ends every session of it at once and refuses its sign-in; the audit row names the operator; enabling lets it sign in again', async () => {
    const target = await person('disabled@people.test', [
      { ws: wsA, role: 'editor' },
      { ws: wsB, role: 'viewer' },
    ]);
    const sessions = [
      await createSession(db.pool, { accountId: target.id, workspaceId: wsA }, 3600),
      await createSession(db.pool, { accountId: target.id, workspaceId: wsB }, 3600),
    ];
    for (const id of sessions)
      expect((await touchSession(db.pool, id, 3600))?.kind).toBe('account');
    const { disableAccount, signInWithPassword } = await people();

    const done = await disableAccount(operatorAccount, target.id, true);
    expect(done.endedSessions).toBe(2);
    expect(done.account.disabledAt).toBeInstanceOf(Date);
    for (const id of sessions) expect(await touchSession(db.pool, id, 3600)).toBeUndefined();
    const signIn = () =>
      signInWithPassword({ email: target.email, password: PASSWORD, address: '203.0.113.9' });
    expect(await codeOf(signIn())).toBe('invalid_credentials');
    expect(await auditRows('account.disable', `accounts/${target.id}`)).toEqual([
      {
        actor_kind: 'account',
        actor_account_id: operatorAccount.accountId,
        actor_key_id: null,
        actor_name: 'Olga Operator',
        workspace_id: null,
        after: { disabled: true, endedSessions: 2 },
      },
    ]);

    await disableAccount(operatorAccount, target.id, false);
    expect((await signIn()).id).toBe(target.id);
    expect(await auditRows('account.enable', `accounts/${target.id}`)).toMatchObject([
      { actor_kind: 'account', actor_account_id: operatorAccount.accountId },
    ]);
  });

  it('R3 an operator cannot disable their own account: cannot_disable_self, and nothing changes', async () => {
    const session = await createSession(
      db.pool,
      { accountId: operatorAccount.accountId, workspaceId: null },
      3600,
    );
    const { disableAccount } = await people();
    const before = await footprint();
    expect(await codeOf(disableAccount(operatorAccount, operatorAccount.accountId, true))).toBe(
      'cannot_disable_self',
    );
    expect(await footprint()).toBe(before);
    expect((await touchSession(db.pool, session, 3600))?.kind).toBe('account');
    // Another operator may.
    const other = await createAccount(db.pool, CLI_ACTOR, {
      email: 'other-operator@people.test',
      name: 'Other Operator',
      passwordHash: null,
      operator: true,
    });
    const done = await disableAccount(
      { accountId: other.id, name: other.name },
      operatorAccount.accountId,
      true,
    );
    expect(done.endedSessions).toBe(1);
    await disableAccount(
      { accountId: other.id, name: other.name },
      operatorAccount.accountId,
      false,
    );
  });

  it('R3 the operator API lists accounts with their workspaces, searched and paged, and PATCH disables one with the operator key as actor', async () => {
    for (let i = 0; i < 52; i += 1) {
      await person(`paged-${String(i).padStart(2, '0')}@people.test`, [
        { ws: wsB, role: 'viewer' },
      ]);
    }
    await person('under_score@people.test');
    const list = async (query: string, key = operatorKey) =>
      call(await accountsRoute(), 'GET', `/operator/accounts${query}`, {}, { key });
    const first = await list('?q=PAGED-');
    expect(first.status).toBe(200);
    expect(first.json.accounts).toHaveLength(50);
    expect(first.json.accounts[0]).toMatchObject({
      email: 'paged-00@people.test',
      name: 'paged-00',
      operator: false,
      disabledAt: null,
      workspaces: [{ workspaceId: wsB, name: 'People B', role: 'viewer' }],
    });
    expect(first.json.accounts[0].passwordHash).toBeUndefined();
    expect(first.text).not.toContain('argon2');
    const second = await list(`?q=paged-&after=${first.json.nextAfterId}`);
    expect(second.json.accounts.map((a: { email: string }) => a.email)).toEqual([
      'paged-50@people.test',
      'paged-51@people.test',
    ]);
    expect(second.json.nextAfterId).toBeNull();
    // `_` and `%` are LIKE wildcards; a search matches them as typed.
    expect((await list('?q=n_e')).json.accounts).toEqual([]);
    expect((await list('?q=n%25e')).json.accounts).toEqual([]);
    expect((await list('?q=under_')).json.accounts.map((a: { email: string }) => a.email)).toEqual([
      'under_score@people.test',
    ]);
    expect((await list('?q=a%00b')).json.error.code).toBe('invalid_query');
    expect((await list('', keyA)).status).toBe(404);

    const target = await person('api-disabled@people.test', [{ ws: wsA, role: 'reviewer' }]);
    const session = await createSession(db.pool, { accountId: target.id, workspaceId: wsA }, 3600);
    const patch = async (id: string, body: unknown, key = operatorKey) =>
      call(
        await accountRoute(),
        'PATCH',
        `/operator/accounts/${id}`,
        { accountId: id },
        {
          key,
          body,
        },
      );
    const before = await footprint();
    expect((await patch(String(target.id), { disabled: 'yes' })).status).toBe(400);
    expect((await patch(String(target.id), { disabled: true }, keyA)).status).toBe(404);
    expect((await patch('0', { disabled: true })).status).toBe(400);
    const missing = await patch('999999', { disabled: true });
    expect([missing.status, missing.json.error.code]).toEqual([404, 'account_not_found']);
    expect(await footprint()).toBe(before);

    const disabled = await patch(String(target.id), { disabled: true });
    expect(disabled.status).toBe(200);
    expect(disabled.json).toMatchObject({ account: { id: target.id }, endedSessions: 1 });
    expect(disabled.json.account.disabledAt).not.toBeNull();
    expect(await touchSession(db.pool, session, 3600)).toBeUndefined();
    expect(await auditRows('account.disable', `accounts/${target.id}`)).toMatchObject([
      { actor_kind: 'operator', actor_key_id: operatorKeyId, actor_account_id: null },
    ]);
    const listed = await list('?q=api-disabled');
    expect(listed.json.accounts[0].disabledAt).not.toBeNull();
    const enabled = await patch(String(target.id), { disabled: false });
    expect(enabled.json).toMatchObject({ account: { disabledAt: null }, endedSessions: 0 });
  });
});

describe('owners revoke invitations (R1)', () => {
  it('R1 an owner revokes a pending invitation: its link then fails with invitation_revoked and changes nothing; the audit row names the owner', async () => {
    const owner = await memberPrincipal(wsA, 'owner');
    const { revokeWorkspaceInvitation, acceptInvitationLink } = await people();
    const { token, invitationId } = await invite(owner, 'revoked@people.test', 'editor');
    const pending = (await listInvitations(db.pool, wsA)).find((i) => i.id === invitationId);
    expect(pending).toMatchObject({
      email: 'revoked@people.test',
      role: 'editor',
      revokedAt: null,
      invitedBy: { accountId: owner.actor.id, name: owner.actor.name },
    });

    const revoked = await revokeWorkspaceInvitation(owner, invitationId);
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    expect(await auditRows('member.revoke_invitation', `invitations/${invitationId}`)).toEqual([
      {
        actor_kind: 'account',
        actor_account_id: owner.actor.id,
        actor_key_id: null,
        actor_name: owner.actor.name,
        workspace_id: wsA,
        after: { revokedAt: expect.any(String) },
      },
    ]);

    const before = await footprint();
    const accept = acceptInvitationLink({
      token,
      name: 'Too Late',
      password: PASSWORD,
      address: '203.0.113.10',
    });
    await expect(accept).rejects.toMatchObject({
      code: 'invitation_revoked',
      message: expect.stringContaining('revoked'),
    });
    expect(await footprint()).toBe(before);
    const { rows } = await db.pool.query('SELECT 1 FROM accounts WHERE email = $1', [
      'revoked@people.test',
    ]);
    expect(rows).toEqual([]);
  });

  it('R1 only owners revoke invitations: editors, reviewers and viewers get 403 forbidden, an owner of another workspace 404, and nothing changes', async () => {
    const owner = await memberPrincipal(wsA, 'owner');
    const { inviteMember, revokeWorkspaceInvitation } = await people();
    const { invitationId } = await inviteMember(owner, {
      email: 'kept@people.test',
      role: 'viewer',
    });
    const got: Record<string, string> = {};
    for (const role of ['editor', 'reviewer', 'viewer'] as const) {
      const principal = await memberPrincipal(wsA, role);
      const start = await footprint();
      got[role] = await codeOf(revokeWorkspaceInvitation(principal, invitationId));
      // Making the member wrote rows; the refused revoke wrote none.
      expect(await footprint()).toBe(start);
    }
    const foreign = await memberPrincipal(wsB, 'owner');
    const start = await footprint();
    got.foreignOwner = await codeOf(revokeWorkspaceInvitation(foreign, invitationId));
    expect(await footprint()).toBe(start);
    expect(got).toEqual({
      editor: 'forbidden',
      reviewer: 'forbidden',
      viewer: 'forbidden',
      foreignOwner: 'invitation_not_found',
    });
    const still = (await listInvitations(db.pool, wsA)).find((i) => i.id === invitationId);
    expect(still?.revokedAt).toBeNull();
  });

  it('R1 an accepted or revoked invitation cannot be revoked (invitation_accepted, invitation_revoked), and an accepted link stays a generic refusal', async () => {
    const owner = await memberPrincipal(wsA, 'owner');
    const { inviteMember, revokeWorkspaceInvitation, acceptInvitationLink } = await people();
    const accepted = await invite(owner, 'joined@people.test', 'viewer');
    await acceptInvitationLink({
      token: accepted.token,
      name: 'Joined',
      password: PASSWORD,
      address: '203.0.113.11',
    });
    const revoked = await inviteMember(owner, { email: 'twice@people.test', role: 'viewer' });
    await revokeWorkspaceInvitation(owner, revoked.invitationId);
    const before = await footprint();
    expect(await codeOf(revokeWorkspaceInvitation(owner, accepted.invitationId))).toBe(
      'invitation_accepted',
    );
    expect(await codeOf(revokeWorkspaceInvitation(owner, revoked.invitationId))).toBe(
      'invitation_revoked',
    );
    expect(await footprint()).toBe(before);
    expect(
      await codeOf(
        acceptInvitationLink({
          token: accepted.token,
          name: 'Again',
          password: PASSWORD,
          address: '203.0.113.11',
        }),
      ),
    ).toBe('invitation_not_found');
  });
});

describe('no one learns whether an email has an account (X6)', () => {
  it('X6 an invitation to an address with an account and to one without refuse a short password or a missing name alike, and a wrong password at sign-in alike', async () => {
    const owner = await memberPrincipal(wsA, 'owner');
    await person('has-account@people.test');
    const { acceptInvitationLink, signInWithPassword } = await people();
    const refusal = async (work: Promise<unknown>) => {
      try {
        await work;
        return 'resolved';
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        return `${error.code}: ${error.message}`;
      }
    };
    const answers = async (email: string) => {
      const { token } = await invite(owner, email, 'viewer');
      const accept = (name: string, password: string) =>
        refusal(acceptInvitationLink({ token, name, password, address: '203.0.113.12' }));
      return [
        await accept('Someone', 'short'),
        await accept('', 'a long enough password here'),
        await refusal(
          signInWithPassword({ email, password: 'not the password', address: '203.0.113.12' }),
        ),
      ];
    };
    const known = await answers('has-account@people.test');
    expect(known).toEqual(await answers('no-account@people.test'));
    expect(known[0]).toMatch(/^weak_password/);
    expect(known[2]).toMatch(/^invalid_credentials/);
  });
});
