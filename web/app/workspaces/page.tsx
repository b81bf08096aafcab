import { membershipsOf } from '@quire/db/accounts';
import { pool } from '@quire/web/lib/server';
import { currentSession } from '@quire/web/lib/session';
import { redirect } from 'next/navigation';
import { switchWorkspaceAction } from './actions';

export const metadata = { title: 'Workspaces · Quire' };
export const dynamic = 'force-dynamic';

/** R1: the workspaces a person belongs to, with their role in each. */
export default async function WorkspacesPage() {
  const session = await currentSession();
  if (session?.kind !== 'account') redirect('/signin');
  const memberships = await membershipsOf(pool(), session.accountId);
  return (
    <main className="narrow">
      <h1>Your workspaces</h1>
      {memberships.length === 0 ? (
        <p className="card muted">
          You are not a member of any workspace yet. Ask an owner for an invitation.
        </p>
      ) : (
        <ul className="cards">
          {memberships.map((m) => (
            <li key={m.workspaceId} className="card">
              <form action={switchWorkspaceAction} className="actions">
                <input type="hidden" name="workspaceId" value={m.workspaceId} />
                <span>
                  <strong>{m.name}</strong> <span className="muted">as {m.role}</span>
                </span>
                <button type="submit">
                  Open<span className="sr-only"> {m.name}</span>
                </button>
              </form>
            </li>
          ))}
        </ul>
      )}
    </main>
  );
}
