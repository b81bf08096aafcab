import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ACTOR } from '../../core/actor';
import { parseConfig } from '../../core/config';
import { DomainError } from '../../core/errors';
import { hashPassword } from '../../core/passwords';
import { createAccount, putMember } from '../../db/accounts';
import { createWorkspace } from '../../db/workspaces';
import { configureWeb } from '../../web/lib/server';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * X2 through web/services/people.ts against a real PostgreSQL: single sign-on links to an
 * existing account only when the provider's `email_verified` is exactly true and the person
 * was signed in to that account when they started; a link copies no flag and no membership,
 * operators are never linked by email, and links and operator grants are audited. The same
 * refusals through the real provider and browser are in test/e2e/oidc.test.ts.
 */
let db: TestDatabase;
let ws: number;
const ISSUER = 'http://idp.test';
const PASSWORD = 'correct horse battery staple';
let counter = 0;

const people = () => import('../../web/services/people');

beforeAll(async () => {
  db = await createTestDatabase();
  ws = (await createWorkspace(db.pool, 'SSO links')).workspace.id;
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'sso-link-test-secret-key-0123456789abcdefgh',
      QUIRE_PUBLIC_URL: 'http://quire.test',
      QUIRE_OIDC_ROLE_MAPPING: JSON.stringify({
        claim: 'groups',
        workspaces: { reviewers: { [ws]: 'reviewer' } },
        operators: ['ops'],
      }),
    }),
  );
}, 60_000);

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await db?.drop();
});

/** A password account, as accepting an invitation makes one, a viewer of the workspace. */
async function passwordAccount(operator = false) {
  counter += 1;
  const account = await createAccount(db.pool, CLI_ACTOR, {
    email: `person-${counter}@corp.test`,
    name: `Person ${counter}`,
    passwordHash: await hashPassword(PASSWORD),
    operator,
  });
  await putMember(db.pool, CLI_ACTOR, { workspaceId: ws, accountId: account.id, role: 'viewer' });
  return account;
}

const claimsFor = (email: string, extra: Record<string, unknown>) => ({
  sub: `subject-of-${email}`,
  email,
  name: 'Whoever Signs In',
  ...extra,
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

/** What a refused sign-in could have changed. */
async function footprint(): Promise<string> {
  const { rows } = await db.pool.query(`SELECT
      (SELECT count(*) FROM audit_log) AS audit,
      (SELECT json_agg(json_build_object('id', id, 'name', name, 'operator', operator,
              'subject', oidc_subject, 'password', password_hash) ORDER BY id) FROM accounts) AS accounts,
      (SELECT json_agg(json_build_object('a', account_id, 'w', workspace_id, 'r', role)
              ORDER BY account_id, workspace_id) FROM workspace_members) AS members`);
  return JSON.stringify(rows[0]);
}

const auditOf = async (action: string, accountId: number) =>
  (
    await db.pool.query(
      `SELECT actor_kind, actor_account_id, after FROM audit_log
        WHERE action = $1 AND target = $2 ORDER BY id`,
      [action, `accounts/${accountId}`],
    )
  ).rows;

describe('single sign-on links only a proven, verified account (X2)', () => {
  it.each([
    ['missing', {}],
    ['the string "false"', { email_verified: 'false' }],
    ['false', { email_verified: false }],
    ['the string "true"', { email_verified: 'true' }],
  ])(
    'X2 email_verified %s links nothing, even for the signed-in holder, and creates no account: oidc_email_unverified',
    async (_, verified) => {
      const { signInWithOidcClaims } = await people();
      const victim = await passwordAccount();
      const before = await footprint();
      const claims = claimsFor(victim.email, { ...verified, groups: ['ops', 'reviewers'] });
      expect(await codeOf(signInWithOidcClaims(ISSUER, claims, null))).toBe(
        'oidc_email_unverified',
      );
      expect(await codeOf(signInWithOidcClaims(ISSUER, claims, victim.id))).toBe(
        'oidc_email_unverified',
      );
      // X6: an address with no account gets the very same answer, and nothing is made for it.
      const unknown = claimsFor('nobody@corp.test', { ...verified, groups: ['ops'] });
      expect(await codeOf(signInWithOidcClaims(ISSUER, unknown, null))).toBe(
        'oidc_email_unverified',
      );
      expect(await footprint()).toBe(before);
    },
  );

  it('X2 a verified email does not link an account the person was not signed in to (none, or another): oidc_link_unproven, nothing changes', async () => {
    const { signInWithOidcClaims } = await people();
    const victim = await passwordAccount();
    const attacker = await passwordAccount();
    const before = await footprint();
    const claims = claimsFor(victim.email, { email_verified: true, groups: ['reviewers'] });
    expect(await codeOf(signInWithOidcClaims(ISSUER, claims, null))).toBe('oidc_link_unproven');
    expect(await codeOf(signInWithOidcClaims(ISSUER, claims, attacker.id))).toBe(
      'oidc_link_unproven',
    );
    expect(await footprint()).toBe(before);
  });

  it('X2 the signed-in holder with a verified email links: audited, the password and name kept, no mapped membership copied, and the link then signs in by subject', async () => {
    const { signInWithOidcClaims, signInWithPassword } = await people();
    const holder = await passwordAccount();
    const claims = claimsFor(holder.email, { email_verified: true, groups: ['reviewers'] });
    const signedIn = await signInWithOidcClaims(ISSUER, claims, holder.id);
    expect(signedIn).toEqual({ accountId: holder.id, operator: false, workspaceId: ws });
    const { rows } = await db.pool.query(
      `SELECT a.name, a.oidc_issuer, a.oidc_subject, a.operator, m.role
         FROM accounts a JOIN workspace_members m ON m.account_id = a.id WHERE a.id = $1`,
      [holder.id],
    );
    expect(rows).toEqual([
      {
        name: holder.name,
        oidc_issuer: ISSUER,
        oidc_subject: claims.sub,
        operator: false,
        role: 'viewer',
      },
    ]);
    expect(await auditOf('account.oidc_link', holder.id)).toEqual([
      {
        actor_kind: 'account',
        actor_account_id: holder.id,
        after: { issuer: ISSUER, proof: 'signed_in' },
      },
    ]);
    // Linked by subject now: no proof needed, and still no mapped powers on a password account.
    const before = await footprint();
    expect(await signInWithOidcClaims(ISSUER, { ...claims, groups: ['ops'] }, null)).toEqual(
      signedIn,
    );
    expect(await footprint()).toBe(before);
    expect(
      (await signInWithPassword({ email: holder.email, password: PASSWORD, address: 'x' })).id,
    ).toBe(holder.id);
  });

  it('X2 operators are never linked by email: neither an operator account nor a person the mapping makes an operator, even signed in', async () => {
    const { signInWithOidcClaims } = await people();
    const operator = await passwordAccount(true);
    const person = await passwordAccount();
    const before = await footprint();
    const asOperator = claimsFor(operator.email, { email_verified: true, groups: [] });
    expect(await codeOf(signInWithOidcClaims(ISSUER, asOperator, operator.id))).toBe(
      'oidc_operator_link',
    );
    const mappedOperator = claimsFor(person.email, { email_verified: true, groups: ['ops'] });
    expect(await codeOf(signInWithOidcClaims(ISSUER, mappedOperator, person.id))).toBe(
      'oidc_operator_link',
    );
    expect(await footprint()).toBe(before);
  });

  it('X2 an account single sign-on made gets the mapped operator flag with an audit row, and loses it with one', async () => {
    const { signInWithOidcClaims } = await people();
    const claims = claimsFor('new-operator@corp.test', { email_verified: true, groups: ['ops'] });
    const first = await signInWithOidcClaims(ISSUER, claims, null);
    expect(first.operator).toBe(true);
    expect(await auditOf('account.operator_grant', first.accountId)).toEqual([
      {
        actor_kind: 'account',
        actor_account_id: first.accountId,
        after: { operator: true, via: 'oidc' },
      },
    ]);
    const again = await signInWithOidcClaims(ISSUER, { ...claims, groups: [] }, null);
    expect(again).toMatchObject({ accountId: first.accountId, operator: false });
    expect(await auditOf('account.operator_revoke', first.accountId)).toHaveLength(1);
  });
});
