import { DomainError } from '../core/errors';
import { type Account, accountOf, withoutPassword } from './accounts';
import { type AuditActor, recordAudit } from './auditLog';
import { type Pool, type Queryable, withTransaction } from './pool';

/**
 * R2, X2: the account a provider's subject signs in as. Linked by issuer and subject once;
 * before that, an email the provider has not verified (exactly `email_verified: true`) opens
 * nothing, and an existing account of the same email is linked only when the person proves
 * they hold it: they were signed in to it when they started the sign-in. An operator is never
 * linked by email, either way round. The provider's mapping (operator flag, memberships) is
 * for accounts single sign-on made; a password account keeps the powers it was given in Quire.
 */

export interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string;
  /** The `email_verified` claim as the provider sent it (anything but `true` is no). */
  emailVerified: unknown;
  name: string;
  /** What the role mapping says of the person's operator flag. */
  operator: boolean;
  /** The account the person was signed in to when they started the sign-in, if any. */
  holderAccountId: number | null;
}

export interface OidcAccount {
  account: Account;
  /** Whether the provider's mapping decides this account's powers (it has no password). */
  mapped: boolean;
}

const COLUMNS = 'id, email, name, operator, disabled_at, created_at, password_hash';

/**
 * R2: the provider's operator flag on an account single sign-on made; a grant or a withdrawal
 * is audited with the account itself as actor (the provider, through its sign-in, decided it).
 */
async function syncOperatorFlag(db: Queryable, account: Account, operator: boolean) {
  if (account.operator === operator) return account;
  await db.query('UPDATE accounts SET operator = $2 WHERE id = $1', [account.id, operator]);
  await recordAudit(db, selfActor(account), {
    action: operator ? 'account.operator_grant' : 'account.operator_revoke',
    target: `accounts/${account.id}`,
    workspaceId: null,
    before: { operator: account.operator },
    after: { operator, via: 'oidc' },
  });
  return { ...account, operator };
}

const selfActor = (account: Account): AuditActor => ({
  kind: 'account',
  id: account.id,
  name: account.name,
});

async function linkedAccount(db: Queryable, identity: OidcIdentity) {
  const { rows } = await db.query(
    `UPDATE accounts SET name = CASE WHEN password_hash IS NULL THEN $3 ELSE name END
      WHERE oidc_issuer = $1 AND oidc_subject = $2 RETURNING ${COLUMNS}`,
    [identity.issuer, identity.subject, identity.name],
  );
  return rows[0] ? accountOf(rows[0]) : undefined;
}

async function createOidcAccount(db: Queryable, identity: OidcIdentity): Promise<Account> {
  const { rows } = await db.query(
    `INSERT INTO accounts (email, name, oidc_issuer, oidc_subject, operator)
     VALUES ($1, $2, $3, $4, false) RETURNING ${COLUMNS}`,
    [identity.email, identity.name, identity.issuer, identity.subject],
  );
  const account = withoutPassword(accountOf(rows[0]));
  await recordAudit(
    db,
    { kind: 'cli' },
    {
      action: 'account.create',
      target: `accounts/${account.id}`,
      workspaceId: null,
      before: null,
      after: { id: account.id, email: account.email, operator: false, via: 'oidc' },
    },
  );
  return syncOperatorFlag(db, account, identity.operator);
}

/** X2: why an existing account of the email is not linked, or nothing when it may be. */
function linkRefusal(
  existing: Account & { oidcSubject: string | null },
  identity: OidcIdentity,
): DomainError | undefined {
  if (existing.oidcSubject !== null) return new DomainError('oidc_link_taken');
  if (existing.operator || identity.operator) return new DomainError('oidc_operator_link');
  if (identity.holderAccountId !== existing.id) return new DomainError('oidc_link_unproven');
  return undefined;
}

export async function accountForOidcIdentity(
  pool: Pool,
  identity: OidcIdentity,
): Promise<OidcAccount> {
  return withTransaction(pool, async (client) => {
    const linked = await linkedAccount(client, identity);
    if (linked) {
      const account = withoutPassword(linked);
      if (linked.passwordHash !== null) return { account, mapped: false };
      return { account: await syncOperatorFlag(client, account, identity.operator), mapped: true };
    }
    // Checked before the email is looked up, so the answer is the same whether or not an
    // account has that email (X6).
    if (identity.emailVerified !== true) throw new DomainError('oidc_email_unverified');
    const { rows } = await client.query(
      `SELECT ${COLUMNS}, oidc_subject FROM accounts WHERE email = $1 FOR UPDATE`,
      [identity.email],
    );
    if (!rows[0]) return { account: await createOidcAccount(client, identity), mapped: true };
    const existing = {
      ...withoutPassword(accountOf(rows[0])),
      oidcSubject: (rows[0].oidc_subject as string | null) ?? null,
    };
    const refusal = linkRefusal(existing, identity);
    if (refusal) throw refusal;
    await client.query('UPDATE accounts SET oidc_issuer = $2, oidc_subject = $3 WHERE id = $1', [
      existing.id,
      identity.issuer,
      identity.subject,
    ]);
    const { oidcSubject: _, ...account } = existing;
    await recordAudit(client, selfActor(account), {
      action: 'account.oidc_link',
      target: `accounts/${account.id}`,
      workspaceId: null,
      before: null,
      after: { issuer: identity.issuer, proof: 'signed_in' },
    });
    // The account keeps its own powers: a link copies no flag and no membership onto it.
    return { account, mapped: false };
  });
}
