import { permits } from '@quire/core/roles';
import { listMembers } from '@quire/db/accounts';
import { listInvitations } from '@quire/db/invitations';
import { listApiKeys } from '@quire/db/workspaces';
import { DevMailLink } from '@quire/web/components/DevMailLink';
import {
  CreateKeyForm,
  InviteForm,
  RemoveMemberForm,
  RevokeInvitationForm,
  RevokeKeyForm,
  RoleForm,
} from '@quire/web/components/MemberForms';
import { Time } from '@quire/web/components/Time';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import { notFound } from 'next/navigation';

export const metadata = { title: 'Members · Quire' };
export const dynamic = 'force-dynamic';

/** R1: the owners' page: members and their roles, invitations, and the workspace's API keys. */
export default async function MembersPage() {
  const principal = await requirePrincipal();
  if (!permits(principal.grant, 'member.invite')) notFound();
  const [members, invitations, keys] = await Promise.all([
    listMembers(pool(), principal.workspaceId),
    listInvitations(pool(), principal.workspaceId),
    listApiKeys(pool(), principal.workspaceId),
  ]);
  const now = new Date();
  // R1: pending is what a link could still open: neither accepted, revoked nor expired.
  const isPending = (i: (typeof invitations)[number]) =>
    !i.acceptedAt && !i.revokedAt && i.expiresAt > now;
  const pending = invitations.filter(isPending);
  const closed = invitations.filter((i) => !isPending(i));
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Members</h1>
          <p className="muted">
            Owners manage members, keys, webhooks and settings; editors upload, start and cancel
            jobs, edit and publish; reviewers edit and publish; viewers read. Removing a member ends
            their sessions at once.
          </p>
        </div>
      </div>
      <div className="columns">
        <section aria-labelledby="members-heading">
          <h2 id="members-heading">People</h2>
          <ul className="cards">
            {members.map((m) => (
              <li key={m.accountId} className="card" data-member={m.email}>
                <p>
                  <strong>{m.name}</strong> <span className="muted">{m.email}</span>
                </p>
                <p className="muted small">
                  {m.role}
                  {m.disabled ? ' · disabled' : ''} · since <Time date={m.since} />
                </p>
                <RoleForm accountId={m.accountId} role={m.role} name={m.name} />
                <RemoveMemberForm accountId={m.accountId} name={m.name} />
              </li>
            ))}
          </ul>
          <h2>API keys</h2>
          <ul className="cards">
            {keys.map((k) => (
              <li key={k.id} className="card" data-key={k.prefix}>
                <p>
                  <strong>{k.name ?? 'unnamed'}</strong> <span className="mono">{k.prefix}…</span>
                </p>
                <p className="muted small">
                  {k.scope} · made by {k.createdBy?.name ?? 'the installation'}{' '}
                  <Time date={k.createdAt} />
                  {k.revokedAt ? ' · revoked' : ''}
                </p>
                {k.revokedAt ? null : <RevokeKeyForm apiKeyId={k.id} name={k.name ?? k.prefix} />}
              </li>
            ))}
          </ul>
        </section>
        <section aria-labelledby="invite-heading">
          <h2 id="invite-heading">Invite someone</h2>
          <p className="muted small">
            The link goes by email to the address you give, and only there: the person chooses their
            password through it.
          </p>
          <InviteForm />
          <DevMailLink />
          <h2 id="pending-heading">Pending invitations</h2>
          {pending.length === 0 ? (
            <p className="muted small">None: every invitation was accepted, revoked or expired.</p>
          ) : (
            <ul className="cards" aria-labelledby="pending-heading">
              {pending.map((i) => (
                <li key={i.id} className="card small" data-invitation={i.email}>
                  <p>
                    <strong>{i.email}</strong> as {i.role}
                  </p>
                  <p className="muted">
                    invited by {i.invitedBy?.name ?? 'the installation'} <Time date={i.createdAt} />{' '}
                    · expires <Time date={i.expiresAt} />
                  </p>
                  <RevokeInvitationForm invitationId={i.id} email={i.email} />
                </li>
              ))}
            </ul>
          )}
          {closed.length > 0 ? (
            <>
              <h2 id="closed-heading">Earlier invitations</h2>
              <ul className="cards" aria-labelledby="closed-heading">
                {closed.map((i) => (
                  <li key={i.id} className="card small" data-invitation={i.email}>
                    {i.email} as {i.role} ·{' '}
                    {i.acceptedAt ? 'accepted' : i.revokedAt ? 'revoked' : 'expired'}
                  </li>
                ))}
              </ul>
            </>
          ) : null}
          <h2>Make an API key</h2>
          <CreateKeyForm />
        </section>
      </div>
    </main>
  );
}
