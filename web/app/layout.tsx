import { providersDigest } from '@quire/db/console';
import { LiveRefresh } from '@quire/web/components/LiveRefresh';
import { NavLinks } from '@quire/web/components/NavLinks';
import { PausedBanner } from '@quire/web/components/PausedBanner';
import { config, pool } from '@quire/web/lib/server';
import { currentOperator, currentPrincipal } from '@quire/web/lib/session';
import type { ReactNode } from 'react';
import { signOut } from './signin/actions';
import './globals.css';

export const metadata = { title: 'Quire', description: 'Transcriptions of pages and recordings' };
export const viewport = { width: 'device-width', initialScale: 1 };
export const dynamic = 'force-dynamic';

export default async function RootLayout({ children }: { children: ReactNode }) {
  const principal = await currentPrincipal();
  const operator = principal ? undefined : await currentOperator();
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
            <NavLinks temporalUiUrl={config().QUIRE_TEMPORAL_UI_URL} operator={!principal} />
          ) : null}
          {principal || operator ? (
            <form action={signOut} className="signout">
              <span className="muted">
                {principal ? `Workspace ${principal.workspaceId}` : 'Operator'}
              </span>
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
