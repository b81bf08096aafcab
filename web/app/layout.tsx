import type { ReactNode } from 'react';
import { config } from '../lib/server';
import { currentPrincipal } from '../lib/session';
import { signOut } from './signin/actions';
import './globals.css';

export const metadata = { title: 'Quire', description: 'Transcriptions of pages and recordings' };
export const dynamic = 'force-dynamic';

export default async function RootLayout({ children }: { children: ReactNode }) {
  const principal = await currentPrincipal();
  return (
    <html lang="en">
      <body>
        <a className="skip" href="#main">
          Skip to content
        </a>
        <header className="topbar">
          <a className="brand" href="/jobs">
            Quire
          </a>
          {principal ? (
            <nav aria-label="Main">
              <a href="/jobs">Jobs</a>
              <a href={config().QUIRE_TEMPORAL_UI_URL} target="_blank" rel="noreferrer">
                Temporal UI
              </a>
            </nav>
          ) : null}
          {principal ? (
            <form action={signOut} className="signout">
              <span className="muted">Workspace {principal.workspaceId}</span>
              <button type="submit" className="link">
                Sign out
              </button>
            </form>
          ) : null}
        </header>
        <div id="main">{children}</div>
      </body>
    </html>
  );
}
