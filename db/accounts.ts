import type { Role } from '../core/roles';
import type { SignInFailures } from '../core/signinDelay';
import { type AuditActor, recordAudit } from './auditLog';
import { ConflictError, isUniqueViolation, NotFoundError } from './errors';
import { type Pool, type Queryable, withTransaction } from './pool';
import { endSessionsOf } from './sessions';

/**
 * R1: accounts of the installation (people) and their memberships of workspaces; the
 * invitations by one-time link are db/invitations.ts. Every change is written with its audit
 * row in one transaction (R5), and every change that takes a power away ends the sessions
 * that held it in that same transaction (R3).
 */

export interface Account {
  id: number;
  email: string;
  name: string;
  operator: boolean;
  disabledAt: Date | null;
  createdAt: Date;
}

export interface AccountWithPassword extends Account {
  passwordHash: string | null;
}

const ACCOUNT_COLUMNS = 'id, email, name, operator, disabled_at, created_at, password_hash';

export function accountOf(r: Record<string, unknown>): AccountWithPassword {
  return {
    id: r.id as number,
    email: r.email as string,
    name: r.name as string,
    operator: r.operator as boolean,
    disabledAt: (r.disabled_at as Date | null) ?? null,
    createdAt: r.created_at as Date,
    passwordHash: (r.password_hash as string | null) ?? null,
  };
}

export const withoutPassword = ({ passwordHash: _, ...account }: AccountWithPassword): Account =>
  account;

export const accountExists = () =>
  new ConflictError('account_exists', 'an account with that email exists');

export async function createAccount(
  db: Queryable,
  actor: AuditActor,
  input: { email: string; name: string; passwordHash: string | null; operator?: boolean },
): Promise<Account> {
  try {
    const { rows } = await db.query(
      `INSERT INTO accounts (email, name, password_hash, operator) VALUES ($1, $2, $3, $4)
       RETURNING ${ACCOUNT_COLUMNS}`,
      [input.email, input.name, input.passwordHash, input.operator ?? false],
    );
    const account = withoutPassword(accountOf(rows[0]));
    await recordAudit(db, actor, {
      action: 'account.create',
      target: `accounts/${account.id}`,
      workspaceId: null,
      before: null,
      after: { id: account.id, email: account.email, operator: account.operator },
    });
    return account;
  } catch (error) {
    if (isUniqueViolation(error, 'accounts_email')) throw accountExists();
    throw error;
  }
}

export async function findAccountByEmail(
  db: Queryable,
  email: string,
): Promise<AccountWithPassword | undefined> {
  const { rows } = await db.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE email = $1`, [
    email,
  ]);
  return rows[0] ? accountOf(rows[0]) : undefined;
}

export async function getAccount(db: Queryable, id: number): Promise<Account | undefined> {
  const { rows } = await db.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [id]);
  return rows[0] ? withoutPassword(accountOf(rows[0])) : undefined;
}

export async function setAccountPassword(
  db: Queryable,
  accountId: number,
  passwordHash: string,
): Promise<void> {
  await db.query('UPDATE accounts SET password_hash = $2 WHERE id = $1', [accountId, passwordHash]);
}

/**
 * R3: an operator disables an account (every session of it ends, in the same transaction) or
 * enables it again. Says how many sessions ended, as the audit row does.
 */
export async function setAccountDisabled(
  pool: Pool,
  actor: AuditActor,
  accountId: number,
  disabled: boolean,
): Promise<{ account: Account; endedSessions: number }> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `UPDATE accounts SET disabled_at = CASE WHEN $2 THEN coalesce(disabled_at, now()) END
        WHERE id = $1 RETURNING ${ACCOUNT_COLUMNS}`,
      [accountId, disabled],
    );
    if (!rows[0]) throw new NotFoundError('account_not_found', 'account not found');
    const endedSessions = disabled ? await endSessionsOf(client, { accountId }) : 0;
    await recordAudit(client, actor, {
      action: disabled ? 'account.disable' : 'account.enable',
      target: `accounts/${accountId}`,
      workspaceId: null,
      before: null,
      after: { disabled, endedSessions },
    });
    return { account: withoutPassword(accountOf(rows[0])), endedSessions };
  });
}

/** An account as operators see it (R3): with the workspaces it belongs to and its role there. */
export interface AccountListing extends Account {
  workspaces: Array<{ workspaceId: number; name: string; role: Role }>;
}

/** Accounts per page of the operators' list; a search narrows it, so a page is plenty. */
export const ACCOUNTS_PAGE_SIZE = 50;

/** `%` and `_` are LIKE's wildcards; what the operator typed is matched as written. */
const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * R3: the installation's accounts in id order, keyset-paged (`afterId`), optionally only those
 * whose email or name contains `search` (case-insensitive).
 */
export async function listAccounts(
  db: Queryable,
  filter: { search?: string; afterId?: number; limit?: number } = {},
): Promise<{ accounts: AccountListing[]; nextAfterId: number | null }> {
  const limit = Math.min(Math.max(filter.limit ?? ACCOUNTS_PAGE_SIZE, 1), 200);
  const search = filter.search?.trim() ? likePattern(filter.search.trim()) : null;
  const { rows } = await db.query(
    `SELECT a.id, a.email, a.name, a.operator, a.disabled_at, a.created_at, a.password_hash,
            coalesce((SELECT jsonb_agg(jsonb_build_object('workspaceId', m.workspace_id,
                                                          'name', w.name, 'role', m.role)
                                       ORDER BY m.workspace_id)
                        FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
                       WHERE m.account_id = a.id), '[]'::jsonb) AS workspaces
       FROM accounts a
      WHERE a.id > $1 AND ($2::text IS NULL OR a.email ILIKE $2 OR a.name ILIKE $2)
      ORDER BY a.id LIMIT $3`,
    [filter.afterId ?? 0, search, limit + 1],
  );
  const page = rows.slice(0, limit).map((r) => ({
    ...withoutPassword(accountOf(r)),
    workspaces: r.workspaces as AccountListing['workspaces'],
  }));
  return {
    accounts: page,
    nextAfterId: rows.length > limit ? (page[page.length - 1]?.id ?? null) : null,
  };
}

// --- Memberships

export interface Member {
  accountId: number;
  email: string;
  name: string;
  role: Role;
  disabled: boolean;
  since: Date;
}

/** The role of an enabled account in a workspace; undefined when it is not a member. */
export async function memberRole(
  db: Queryable,
  workspaceId: number,
  accountId: number,
): Promise<Role | undefined> {
  const { rows } = await db.query(
    `SELECT m.role FROM workspace_members m JOIN accounts a ON a.id = m.account_id
      WHERE m.workspace_id = $1 AND m.account_id = $2 AND a.disabled_at IS NULL`,
    [workspaceId, accountId],
  );
  return rows[0]?.role;
}

export async function listMembers(db: Queryable, workspaceId: number): Promise<Member[]> {
  const { rows } = await db.query(
    `SELECT m.account_id, a.email, a.name, m.role, a.disabled_at, m.created_at
       FROM workspace_members m JOIN accounts a ON a.id = m.account_id
      WHERE m.workspace_id = $1 ORDER BY a.email`,
    [workspaceId],
  );
  return rows.map((r) => ({
    accountId: r.account_id,
    email: r.email,
    name: r.name,
    role: r.role,
    disabled: r.disabled_at !== null,
    since: r.created_at,
  }));
}

/** The workspaces an account belongs to, with its role in each (for choosing after sign-in). */
export async function membershipsOf(
  db: Queryable,
  accountId: number,
): Promise<Array<{ workspaceId: number; name: string; role: Role }>> {
  const { rows } = await db.query(
    `SELECT m.workspace_id, w.name, m.role FROM workspace_members m
       JOIN workspaces w ON w.id = m.workspace_id WHERE m.account_id = $1 ORDER BY w.id`,
    [accountId],
  );
  return rows.map((r) => ({ workspaceId: r.workspace_id, name: r.name, role: r.role }));
}

/** Adds a member, or sets the role of one (the development owner, the OIDC mapping). */
export async function putMember(
  db: Queryable,
  actor: AuditActor,
  input: { workspaceId: number; accountId: number; role: Role },
): Promise<void> {
  const { rows } = await db.query(
    `INSERT INTO workspace_members (workspace_id, account_id, role) VALUES ($1, $2, $3)
     ON CONFLICT (workspace_id, account_id) DO UPDATE SET role = EXCLUDED.role
     RETURNING (xmax = 0) AS inserted`,
    [input.workspaceId, input.accountId, input.role],
  );
  await recordAudit(db, actor, {
    action: rows[0].inserted ? 'member.join' : 'member.change_role',
    target: `members/${input.accountId}`,
    workspaceId: input.workspaceId,
    before: null,
    after: { accountId: input.accountId, role: input.role },
  });
}

const memberNotFound = () => new NotFoundError('member_not_found', 'member not found');
const lastOwner = () =>
  new ConflictError('last_owner', 'a workspace keeps at least one owner; make another first');

/** Locks the workspace's memberships, so two owners demoting each other cannot leave none. */
async function lockMembers(db: Queryable, workspaceId: number) {
  await db.query('SELECT id FROM workspaces WHERE id = $1 FOR UPDATE', [workspaceId]);
}

async function ownersBesides(db: Queryable, workspaceId: number, accountId: number) {
  const { rows } = await db.query(
    `SELECT count(*)::int AS n FROM workspace_members
      WHERE workspace_id = $1 AND role = 'owner' AND account_id <> $2`,
    [workspaceId, accountId],
  );
  return rows[0].n as number;
}

/**
 * R1: an owner changes a member's role. A lowered role applies at the member's next request
 * (every request reads the membership); the last owner cannot be demoted.
 */
export async function changeMemberRole(
  pool: Pool,
  actor: AuditActor,
  input: { workspaceId: number; accountId: number; role: Role },
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await lockMembers(client, input.workspaceId);
    const { rows } = await client.query(
      'SELECT role FROM workspace_members WHERE workspace_id = $1 AND account_id = $2',
      [input.workspaceId, input.accountId],
    );
    if (!rows[0]) throw memberNotFound();
    const before = rows[0].role as Role;
    if (before === 'owner' && input.role !== 'owner') {
      if ((await ownersBesides(client, input.workspaceId, input.accountId)) === 0) {
        throw lastOwner();
      }
    }
    await client.query(
      'UPDATE workspace_members SET role = $3 WHERE workspace_id = $1 AND account_id = $2',
      [input.workspaceId, input.accountId, input.role],
    );
    await recordAudit(client, actor, {
      action: 'member.change_role',
      target: `members/${input.accountId}`,
      workspaceId: input.workspaceId,
      before: { role: before },
      after: { role: input.role },
    });
  });
}

/** R1, R3: an owner removes a member; every session of theirs in this workspace ends with it. */
export async function removeMember(
  pool: Pool,
  actor: AuditActor,
  input: { workspaceId: number; accountId: number },
): Promise<{ endedSessions: number }> {
  return withTransaction(pool, async (client) => {
    await lockMembers(client, input.workspaceId);
    const { rows } = await client.query(
      'DELETE FROM workspace_members WHERE workspace_id = $1 AND account_id = $2 RETURNING role',
      [input.workspaceId, input.accountId],
    );
    if (!rows[0]) throw memberNotFound();
    if (rows[0].role === 'owner') {
      if ((await ownersBesides(client, input.workspaceId, input.accountId)) === 0) {
        throw lastOwner();
      }
    }
    const endedSessions = await endSessionsOf(client, {
      accountId: input.accountId,
      workspaceId: input.workspaceId,
    });
    await recordAudit(client, actor, {
      action: 'member.remove',
      target: `members/${input.accountId}`,
      workspaceId: input.workspaceId,
      before: { role: rows[0].role },
      after: { endedSessions },
    });
    return { endedSessions };
  });
}

// --- Sign-in attempts (R2)

export async function recordSignInFailure(
  db: Queryable,
  input: { email: string; address: string },
): Promise<void> {
  await db.query('INSERT INTO sign_in_failures (email, address) VALUES ($1, $2)', [
    input.email,
    input.address,
  ]);
}

/**
 * X4: failures within the window of this account from this address, and of this address over
 * every account, each with the time since its newest (PostgreSQL's clock, shared by every
 * replica). Rows older than the window are dropped on the way (they never count again).
 */
export async function recentSignInFailures(
  db: Queryable,
  input: { email: string; address: string; windowSeconds: number },
): Promise<SignInFailures> {
  await db.query(
    `DELETE FROM sign_in_failures WHERE at < now() - make_interval(secs => $1) AND id IN (
       SELECT id FROM sign_in_failures WHERE at < now() - make_interval(secs => $1) LIMIT 1000)`,
    [input.windowSeconds],
  );
  const { rows } = await db.query(
    `SELECT count(*) FILTER (WHERE email = $1)::int AS pair,
            coalesce(extract(epoch FROM now() - max(at) FILTER (WHERE email = $1)) * 1000, 0)::float8
              AS pair_ago_ms,
            count(*)::int AS address,
            coalesce(extract(epoch FROM now() - max(at)) * 1000, 0)::float8 AS address_ago_ms
       FROM sign_in_failures
      WHERE address = $2 AND at >= now() - make_interval(secs => $3)`,
    [input.email, input.address, input.windowSeconds],
  );
  const row = rows[0];
  return {
    pair: row.pair,
    pairAgoMs: row.pair_ago_ms,
    address: row.address,
    addressAgoMs: row.address_ago_ms,
  };
}

/**
 * X4: a successful sign-in clears this account's failures from this address only: another
 * address's guesses at the account keep slowing that address.
 */
export async function clearSignInFailures(
  db: Queryable,
  input: { email: string; address: string },
): Promise<void> {
  await db.query('DELETE FROM sign_in_failures WHERE email = $1 AND address = $2', [
    input.email,
    input.address,
  ]);
}
