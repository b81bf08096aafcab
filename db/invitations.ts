import { createHash, randomBytes } from 'node:crypto';
import type { AccountActor } from '../core/actor';
import { DomainError } from '../core/errors';
import type { Role } from '../core/roles';
import { type Account, createAccount, getAccount } from './accounts';
import { recordAudit } from './auditLog';
import { ClosedLinkError, ConflictError, NotFoundError } from './errors';
import { type Pool, type Queryable, withTransaction } from './pool';

/**
 * R1: invitations by one-time link. An owner invites an email with a role; the link's token
 * is stored only as its SHA-256, expires, works once, and an owner can revoke it while it is
 * pending. Accepting it makes the account (or finds it) and the membership in one
 * transaction, with its audit row (R5).
 */

export interface InvitationView {
  id: number;
  email: string;
  role: Role;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
}

/** An invitation as the members page lists it: with the owner who made it (R5). */
export interface InvitationListing extends InvitationView {
  invitedBy: { accountId: number; name: string } | null;
}

const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/** The link's token: `qi_` and 32 random bytes; only its SHA-256 is stored. */
export async function createInvitation(
  pool: Pool,
  actor: AccountActor,
  input: { workspaceId: number; email: string; role: Role; ttlSeconds: number },
): Promise<{ invitation: InvitationView; token: string }> {
  const token = `qi_${randomBytes(32).toString('base64url')}`;
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `INSERT INTO invitations (workspace_id, email, role, token_hash, created_by, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))
       RETURNING id, email, role, created_at, expires_at, accepted_at, revoked_at`,
      [input.workspaceId, input.email, input.role, hashToken(token), actor.id, input.ttlSeconds],
    );
    const invitation = invitationOf(rows[0]);
    await recordAudit(client, actor, {
      action: 'member.invite',
      target: `invitations/${invitation.id}`,
      workspaceId: input.workspaceId,
      before: null,
      after: { email: input.email, role: input.role, expiresAt: invitation.expiresAt },
    });
    return { invitation, token };
  });
}

function invitationOf(r: Record<string, unknown>): InvitationView {
  return {
    id: r.id as number,
    email: r.email as string,
    role: r.role as Role,
    createdAt: r.created_at as Date,
    expiresAt: r.expires_at as Date,
    acceptedAt: (r.accepted_at as Date | null) ?? null,
    revokedAt: (r.revoked_at as Date | null) ?? null,
  };
}

export async function listInvitations(
  db: Queryable,
  workspaceId: number,
): Promise<InvitationListing[]> {
  const { rows } = await db.query(
    `SELECT i.id, i.email, i.role, i.created_at, i.expires_at, i.accepted_at, i.revoked_at,
            i.created_by, a.name AS created_by_name
       FROM invitations i LEFT JOIN accounts a ON a.id = i.created_by
      WHERE i.workspace_id = $1 ORDER BY i.id DESC LIMIT 100`,
    [workspaceId],
  );
  return rows.map((r) => ({
    ...invitationOf(r),
    invitedBy: r.created_by === null ? null : { accountId: r.created_by, name: r.created_by_name },
  }));
}

/**
 * R1: an owner revokes an invitation that is still pending (not accepted, not revoked), so its
 * link opens nothing. The update is fenced on that state; a miss says why.
 */
export async function revokeInvitation(
  pool: Pool,
  actor: AccountActor,
  input: { workspaceId: number; invitationId: number },
): Promise<InvitationView> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `UPDATE invitations SET revoked_at = now()
        WHERE id = $1 AND workspace_id = $2 AND accepted_at IS NULL AND revoked_at IS NULL
        RETURNING id, email, role, created_at, expires_at, accepted_at, revoked_at`,
      [input.invitationId, input.workspaceId],
    );
    if (!rows[0]) {
      const found = await client.query(
        'SELECT accepted_at FROM invitations WHERE id = $1 AND workspace_id = $2',
        [input.invitationId, input.workspaceId],
      );
      if (!found.rows[0]) throw new NotFoundError('invitation_not_found', 'invitation not found');
      if (found.rows[0].accepted_at) {
        throw new ConflictError('invitation_accepted', 'this invitation was accepted already');
      }
      throw new ConflictError('invitation_revoked', 'this invitation was revoked already');
    }
    const invitation = invitationOf(rows[0]);
    await recordAudit(client, actor, {
      action: 'member.revoke_invitation',
      target: `invitations/${invitation.id}`,
      workspaceId: input.workspaceId,
      before: { email: invitation.email, role: invitation.role, expiresAt: invitation.expiresAt },
      after: { revokedAt: invitation.revokedAt },
    });
    return invitation;
  });
}

/** What a link offers, if it is still open (not used, revoked or expired). */
export async function openInvitation(
  db: Queryable,
  token: string,
): Promise<(InvitationView & { workspaceId: number; workspaceName: string }) | undefined> {
  const { rows } = await db.query(
    `SELECT i.id, i.email, i.role, i.created_at, i.expires_at, i.accepted_at, i.revoked_at,
            i.workspace_id, w.name AS workspace_name
       FROM invitations i JOIN workspaces w ON w.id = i.workspace_id
      WHERE i.token_hash = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL
        AND i.expires_at > now()`,
    [hashToken(token)],
  );
  if (!rows[0]) return undefined;
  return {
    ...invitationOf(rows[0]),
    workspaceId: rows[0].workspace_id,
    workspaceName: rows[0].workspace_name,
  };
}

export const invitationClosed = () =>
  new DomainError(
    'invitation_not_found',
    'this invitation link is not valid: used, revoked or expired',
  );

export const invitationRevoked = () =>
  new ClosedLinkError(
    'invitation_revoked',
    'this invitation was revoked by an owner of the workspace; ask them for a new one',
  );

/**
 * Why a link opens nothing: revoked (its own code, so the person knows to ask again) or
 * otherwise closed (used, expired, or no such link).
 */
export async function closedInvitationError(db: Queryable, token: string): Promise<DomainError> {
  const { rows } = await db.query(
    'SELECT revoked_at FROM invitations WHERE token_hash = $1 AND accepted_at IS NULL',
    [hashToken(token)],
  );
  return rows[0]?.revoked_at ? invitationRevoked() : invitationClosed();
}

/**
 * R1: accepting a link, once. The invitation is claimed by a fenced update (still open), the
 * account made (or the existing one of that email, which must prove its password first:
 * `account` is then given) and the membership added, all in one transaction.
 */
export async function acceptInvitation(
  pool: Pool,
  token: string,
  who:
    | { kind: 'new'; name: string; passwordHash: string }
    | { kind: 'existing'; accountId: number },
): Promise<{ account: Account; workspaceId: number; role: Role }> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `SELECT id, workspace_id, email, role FROM invitations
        WHERE token_hash = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()
        FOR UPDATE`,
      [hashToken(token)],
    );
    const invitation = rows[0];
    if (!invitation) throw await closedInvitationError(client, token);
    let account: Account;
    if (who.kind === 'new') {
      account = await createAccount(
        client,
        { kind: 'cli' },
        {
          email: invitation.email,
          name: who.name,
          passwordHash: who.passwordHash,
        },
      );
    } else {
      const existing = await getAccount(client, who.accountId);
      if (!existing || existing.email !== invitation.email || existing.disabledAt) {
        throw invitationClosed();
      }
      account = existing;
    }
    const claimed = await client.query(
      `UPDATE invitations SET accepted_at = now(), accepted_by = $2
        WHERE id = $1 AND accepted_at IS NULL`,
      [invitation.id, account.id],
    );
    if (claimed.rowCount !== 1) throw invitationClosed();
    const accountActor: AccountActor = { kind: 'account', id: account.id, name: account.name };
    await client.query(
      `INSERT INTO workspace_members (workspace_id, account_id, role) VALUES ($1, $2, $3)
       ON CONFLICT (workspace_id, account_id) DO NOTHING`,
      [invitation.workspace_id, account.id, invitation.role],
    );
    await recordAudit(client, accountActor, {
      action: 'member.join',
      target: `members/${account.id}`,
      workspaceId: invitation.workspace_id,
      before: null,
      after: { accountId: account.id, role: invitation.role, invitationId: invitation.id },
    });
    return { account, workspaceId: invitation.workspace_id, role: invitation.role };
  });
}
