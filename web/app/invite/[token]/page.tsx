import { closedInvitationError, invitationClosed, openInvitation } from '@quire/db/invitations';
import { refusalOf } from '@quire/web/lib/errors';
import { pool } from '@quire/web/lib/server';
import { AcceptForm } from './AcceptForm';

export const metadata = { title: 'Invitation · Quire' };
export const dynamic = 'force-dynamic';

/** R1: an invitation link; it works once, until it expires or an owner revokes it. */
export default async function InvitationPage({ params }: { params: Promise<{ token: string }> }) {
  const { token } = await params;
  const invitation = /^qi_[A-Za-z0-9_-]{43}$/.test(token)
    ? await openInvitation(pool(), token)
    : undefined;
  if (!invitation) {
    // A revoked link says so (the person knows to ask again); any other closed link is alike.
    const refusal = refusalOf(
      /^qi_[A-Za-z0-9_-]{43}$/.test(token)
        ? await closedInvitationError(pool(), token)
        : invitationClosed(),
    );
    return (
      <main className="narrow">
        <h1>Invitation</h1>
        <p className="card error" data-code={refusal.code}>
          {refusal.message}
        </p>
      </main>
    );
  }
  return (
    <main className="narrow">
      <h1>Join {invitation.workspaceName}</h1>
      <p className="muted">
        {invitation.email} is invited as {invitation.role}.
      </p>
      {/* X6: one form whether or not the address has an account, so the link says nothing of it. */}
      <AcceptForm token={token} />
    </main>
  );
}
