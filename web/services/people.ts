import 'server-only';
import { DomainError } from '@quire/core/errors';
import { mapClaims } from '@quire/core/oidcRoles';
import {
  hashPassword,
  normalizeEmail,
  passwordProblem,
  verifyPassword,
} from '@quire/core/passwords';
import { isKeyScope, isRole, type KeyScope, type Principal, type Role } from '@quire/core/roles';
import { signInWaitMs } from '@quire/core/signinDelay';
import { describeTextFault, textFault } from '@quire/core/text';
import {
  type Account,
  type AccountListing,
  changeMemberRole,
  clearSignInFailures,
  findAccountByEmail,
  listAccounts,
  memberRole,
  membershipsOf,
  putMember,
  recentSignInFailures,
  recordSignInFailure,
  removeMember,
  setAccountDisabled,
} from '@quire/db/accounts';
import {
  acceptInvitation,
  closedInvitationError,
  createInvitation,
  type InvitationView,
  openInvitation,
  revokeInvitation,
} from '@quire/db/invitations';
import { accountForOidcIdentity } from '@quire/db/oidcAccounts';
import type { OperatorPrincipal } from '@quire/db/operatorKeys';
import { createApiKey, getWorkspace, revokeApiKey } from '@quire/db/workspaces';
import { config, pool } from '@quire/web/lib/server';
import { requireAction } from './access';
import { mailServer, sendLetter } from './mail';
import { operatorActor } from './operator';

/**
 * R1-R3, for the console and the admin CLI alike: local sign-in (argon2id, rate-limited per
 * account and per address in PostgreSQL, so every replica counts the same attempts), the
 * members, invitations and keys of a workspace, and operators disabling accounts.
 */

const wrongCredentials = () =>
  new DomainError('invalid_credentials', 'the email or password is wrong');

/**
 * R2: an email and password in; the account out, or a refusal. Too many failures of the
 * account or from the address within the window refuse even a right password until the
 * window has passed, so guessing gains nothing from speed.
 */
export async function signInWithPassword(input: {
  email: string;
  password: string;
  address: string;
}): Promise<Account> {
  const settings = config();
  const email = normalizeEmail(input.email);
  if (!email || input.password.length === 0 || input.password.length > 1024) {
    throw wrongCredentials();
  }
  const failures = await recentSignInFailures(pool(), {
    email,
    address: input.address,
    windowSeconds: settings.QUIRE_SIGNIN_WINDOW_SECONDS,
  });
  // X4: a wait, never a lock; the password is not even checked until it has passed.
  const waitMs = signInWaitMs(failures, {
    perAccount: settings.QUIRE_SIGNIN_MAX_FAILURES_PER_ACCOUNT,
    perAddress: settings.QUIRE_SIGNIN_MAX_FAILURES_PER_ADDRESS,
    delayMs: settings.QUIRE_SIGNIN_DELAY_MS,
    maxDelayMs: settings.QUIRE_SIGNIN_MAX_DELAY_SECONDS * 1_000,
  });
  if (waitMs > 0) {
    throw new DomainError(
      'too_many_attempts',
      `too many failed sign-ins; try again in ${Math.ceil(waitMs / 1_000)} s`,
    );
  }
  const account = await findAccountByEmail(pool(), email);
  const matches = await verifyPassword(account?.passwordHash ?? null, input.password);
  if (!account || !matches || account.disabledAt) {
    await recordSignInFailure(pool(), { email, address: input.address });
    throw wrongCredentials();
  }
  await clearSignInFailures(pool(), { email, address: input.address });
  const { passwordHash: _, ...signedIn } = account;
  return signedIn;
}

/** Where a signed-in account starts: the operator view, or its first workspace (null: none). */
export async function firstWorkspaceOf(account: Account): Promise<number | null> {
  if (account.operator) return null;
  return (await membershipsOf(pool(), account.id))[0]?.workspaceId ?? null;
}

const ownerActor = (principal: Principal) => {
  if (principal.actor.kind !== 'account') {
    // The matrix lets no key manage people or keys; this is the type's proof of it.
    throw new DomainError('forbidden', 'only a person manages members and keys');
  }
  return principal.actor;
};

/**
 * R1, R9, X2: an owner invites someone by email with a role. The one-time link goes only to the
 * invited address, by email: the owner never sees it, so no one sets a password on an address
 * they do not hold. X6: the answer is the same whether or not the address has an account (the
 * accounts are not even read here; the message is the same too, and the link says which to do).
 * A message the server refuses leaves no open invitation behind.
 */
export async function inviteMember(
  principal: Principal,
  input: { email: string; role: string },
): Promise<{ invitationId: number; email: string; expiresAt: Date }> {
  requireAction(principal, 'member.invite');
  const email = normalizeEmail(input.email);
  if (!email) throw new DomainError('invalid_email', 'that is not an email address');
  if (!isRole(input.role)) throw new DomainError('invalid_role', 'unknown role');
  mailServer();
  const settings = config();
  const actor = ownerActor(principal);
  const workspace = await getWorkspace(pool(), principal.workspaceId);
  const { invitation, token } = await createInvitation(pool(), actor, {
    workspaceId: principal.workspaceId,
    email,
    role: input.role,
    ttlSeconds: settings.QUIRE_INVITATION_SECONDS,
  });
  const link = `${settings.QUIRE_PUBLIC_URL.replace(/\/$/, '')}/invite/${token}`;
  try {
    await sendLetter({
      to: email,
      subject: `You are invited to ${workspace?.name ?? 'a workspace'} on Quire`,
      text: [
        `${actor.name ?? 'An owner'} invites you to the workspace "${workspace?.name ?? principal.workspaceId}" on Quire, as ${input.role}.`,
        `Join here (the link works once, for ${Math.round(settings.QUIRE_INVITATION_SECONDS / 86_400) || 1} days):`,
        '',
        link,
        '',
        'If you have a Quire account with this address, give its password there; otherwise choose one.',
        'If you did not expect this, ignore this message: nothing is made until the link is followed.',
      ].join('\n'),
    });
  } catch (error) {
    await revokeInvitation(pool(), actor, {
      workspaceId: principal.workspaceId,
      invitationId: invitation.id,
    });
    throw error;
  }
  return { invitationId: invitation.id, email, expiresAt: invitation.expiresAt };
}

/**
 * R1: accepting an invitation link. Someone who has an account already (same email) proves it
 * with their password; a new person's name and password make the account. Single use. X6: the
 * form and the checks before the password is weighed are the same for both, so the link does
 * not say whether its address has an account.
 */
export async function acceptInvitationLink(input: {
  token: string;
  name: string;
  password: string;
  address: string;
}): Promise<{ account: Account; workspaceId: number; role: Role }> {
  const open = await openInvitation(pool(), input.token);
  if (!open) throw await closedInvitationError(pool(), input.token);
  const name = input.name.trim();
  if (name.length < 1 || name.length > 200) {
    throw new DomainError('invalid_name', 'a name has 1 to 200 characters');
  }
  const problem = passwordProblem(input.password);
  if (problem) throw new DomainError('weak_password', problem);
  if (await findAccountByEmail(pool(), open.email)) {
    const account = await signInWithPassword({
      email: open.email,
      password: input.password,
      address: input.address,
    });
    return acceptInvitation(pool(), input.token, { kind: 'existing', accountId: account.id });
  }
  return acceptInvitation(pool(), input.token, {
    kind: 'new',
    name,
    passwordHash: await hashPassword(input.password),
  });
}

/**
 * R1: an owner revokes a pending invitation of their workspace; its link then opens nothing
 * (`invitation_revoked`). Audited naming the owner (R5). Another workspace's invitation is 404.
 */
export async function revokeWorkspaceInvitation(
  principal: Principal,
  invitationId: number,
): Promise<InvitationView> {
  requireAction(principal, 'member.revoke_invitation');
  return revokeInvitation(pool(), ownerActor(principal), {
    workspaceId: principal.workspaceId,
    invitationId,
  });
}

export async function changeRole(
  principal: Principal,
  input: { accountId: number; role: string },
): Promise<void> {
  requireAction(principal, 'member.change_role');
  if (!isRole(input.role)) throw new DomainError('invalid_role', 'unknown role');
  await changeMemberRole(pool(), ownerActor(principal), {
    workspaceId: principal.workspaceId,
    accountId: input.accountId,
    role: input.role,
  });
}

/** R1, R3: removing a member ends every session of theirs in this workspace at once. */
export async function removeWorkspaceMember(
  principal: Principal,
  accountId: number,
): Promise<{ endedSessions: number }> {
  requireAction(principal, 'member.remove');
  return removeMember(pool(), ownerActor(principal), {
    workspaceId: principal.workspaceId,
    accountId,
  });
}

/** R1: an owner makes a named key with a scope; attributed to the owner (R5). */
export async function createWorkspaceKey(
  principal: Principal,
  input: { name: string; scope: string },
): Promise<{ id: number; key: string }> {
  requireAction(principal, 'api_key.create');
  const name = input.name.trim();
  if (name.length < 1 || name.length > 200) {
    throw new DomainError('invalid_name', 'a key has a name of 1 to 200 characters');
  }
  if (!isKeyScope(input.scope)) {
    throw new DomainError('invalid_scope', 'a key is scoped read or write');
  }
  const scope: KeyScope = input.scope;
  const made = await createApiKey(pool(), ownerActor(principal), {
    workspaceId: principal.workspaceId,
    name,
    scope,
  });
  return { id: made.id, key: made.key };
}

export async function revokeWorkspaceKey(principal: Principal, apiKeyId: number): Promise<void> {
  requireAction(principal, 'api_key.revoke');
  await revokeApiKey(pool(), ownerActor(principal), {
    workspaceId: principal.workspaceId,
    apiKeyId,
  });
}

/**
 * R3: an operator disables an account (every session of it ends at once, on every replica:
 * each request reads the session row) or enables it again; audited with the operator as actor.
 * An operator cannot disable their own account: they would lock themself out mid-act.
 */
export async function disableAccount(
  operator: OperatorPrincipal,
  accountId: number,
  disabled: boolean,
): Promise<{ account: Account; endedSessions: number }> {
  if (disabled && 'accountId' in operator && operator.accountId === accountId) {
    throw new DomainError(
      'cannot_disable_self',
      'an operator cannot disable their own account; another operator can',
    );
  }
  return setAccountDisabled(pool(), operatorActor(operator), accountId, disabled);
}

/** The longest search an operator types into the accounts list (an email is at most 254). */
export const MAX_ACCOUNT_SEARCH_CHARS = 200;

/**
 * R3: the installation's accounts for operators, by page, optionally searched by email or
 * name. `operator` is the proof that only an operator asks.
 */
export async function listInstallationAccounts(
  _operator: OperatorPrincipal,
  filter: { search?: string; afterId?: number },
): Promise<{ accounts: AccountListing[]; nextAfterId: number | null }> {
  const search = filter.search?.trim() ?? '';
  const fault = textFault(search);
  if (fault) {
    throw new DomainError('invalid_text', `the search ${describeTextFault(fault)}`);
  }
  if (search.length > MAX_ACCOUNT_SEARCH_CHARS) {
    throw new DomainError(
      'invalid_search',
      `search for at most ${MAX_ACCOUNT_SEARCH_CHARS} characters`,
    );
  }
  return listAccounts(pool(), { search, afterId: filter.afterId });
}

/**
 * R2, X2: a person signed in at the identity provider: their account (db/oidcAccounts.ts says
 * when an existing one is linked; `holderAccountId` is the account the person was signed in to
 * when they started), and, for an account single sign-on made, the operator flag and the
 * memberships the mapping gives (QUIRE_OIDC_ROLE_MAPPING; a mapped workspace gets the mapped
 * role at every sign-in, memberships from invitations stay). Where the session starts: the
 * operator view, the first mapped workspace, or the first of any.
 */
export async function signInWithOidcClaims(
  issuer: string,
  claims: Record<string, unknown>,
  holderAccountId: number | null = null,
): Promise<{ accountId: number; operator: boolean; workspaceId: number | null }> {
  const subject = typeof claims.sub === 'string' ? claims.sub : undefined;
  const email = typeof claims.email === 'string' ? normalizeEmail(claims.email) : undefined;
  if (!subject || !email) throw new DomainError('oidc_claims');
  const name =
    typeof claims.name === 'string' && claims.name.trim()
      ? claims.name.trim().slice(0, 200)
      : email;
  const access = mapClaims(config().QUIRE_OIDC_ROLE_MAPPING, claims);
  const { account, mapped } = await accountForOidcIdentity(pool(), {
    issuer,
    subject,
    email,
    emailVerified: claims.email_verified,
    name,
    operator: access.operator,
    holderAccountId,
  });
  if (account.disabledAt) throw wrongCredentials();
  const actor = { kind: 'account' as const, id: account.id, name: account.name };
  const mappedWorkspaces: number[] = [];
  for (const membership of mapped ? access.memberships : []) {
    if (!(await getWorkspace(pool(), membership.workspaceId))) continue;
    mappedWorkspaces.push(membership.workspaceId);
    if ((await memberRole(pool(), membership.workspaceId, account.id)) === membership.role)
      continue;
    await putMember(pool(), actor, { ...membership, accountId: account.id });
  }
  const workspaceId = account.operator
    ? null
    : (mappedWorkspaces[0] ?? (await firstWorkspaceOf(account)));
  return { accountId: account.id, operator: account.operator, workspaceId };
}

/** For switching workspaces: the account's role there, if it is a member. */
export function roleIn(accountId: number, workspaceId: number) {
  return memberRole(pool(), workspaceId, accountId);
}
