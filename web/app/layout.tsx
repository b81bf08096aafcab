import { ACTIONS, permits } from '@quire/core/roles';
import { providersDigest } from '@quire/db/console';
import { LiveRefresh } from '@quire/web/components/LiveRefresh';
import { NavLinks } from '@quire/web/components/NavLinks';
import { PausedBanner } from '@quire/web/components/PausedBanner';
import { config, pool } from '@quire/web/lib/server';
import { currentSession, operatorOfSession, principalOfSession } from '@quire/web/lib/session';
import type { ReactNode } from 'react';
import { signOut } from './signin/actions';
import './globals.css';

export const metadata = { title: 'Quire', description: 'Transcriptions of pages and recordings' };
export const viewport = { width: 'device-width', initialScale: 1 };
export const dynamic = 'force-dynamic';

export default async function RootLayout({ children }: { children: ReactNode }) {
  const session = await currentSession();
  const principal = principalOfSession(session);
  const operator = principal ? undefined : operatorOfSession(session);
  const providers = principal
    ? await providersDigest(pool(), principal.workspaceId).catch(() => undefined)
    : undefined;
  return (
    <html lang="en">
      <body>
        <a className="skip" href="#main">
          Skip to content
        </a>
        <header className="topbar">
          <a className="brand" href={principal ? '/jobs' : operator ? '/operator' : '/signin'}>
            <span className="brand-mark" aria-hidden="true">
              Q
            </span>
            Quire
          </a>
          {principal || operator ? (
            <NavLinks
              temporalUiUrl={operator ? config().QUIRE_TEMPORAL_UI_URL : undefined}
              operator={!principal}
              allowed={principal ? ACTIONS.filter((act) => permits(principal.grant, act)) : []}
            />
          ) : null}
          {session ? (
            <form action={signOut} className="signout">
              <span className="muted">
                {session.kind === 'account' ? `${session.name} · ` : ''}
                {principal
                  ? `Workspace ${principal.workspaceId}${principal.grant.kind === 'role' ? ` (${principal.grant.role})` : ''}`
                  : operator
                    ? 'Operator'
                    : 'No workspace'}
              </span>
              {session.kind === 'account' ? (
                <a href="/account/password" className="small">
                  Password
                </a>
              ) : null}
              <button type="submit" className="link">
                Sign out
              </button>
            </form>
          ) : null}
        </header>
        {principal ? (
          <>
            <PausedBanner principal={principal} />
            <LiveRefresh topics={['providers']} baselines={providers ? { providers } : {}} quiet />
          </>
        ) : null}
        <div id="main" tabIndex={-1}>
          {children}
        </div>
      </body>
    </html>
  );
}
