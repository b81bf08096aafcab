/**
 * Runs once when a web server process starts (Next.js instrumentation). D1: the web app signs
 * sessions and page tokens and seals webhook secrets with the installation's key, so it
 * checks that key against PostgreSQL before serving, and exits when it is not the one.
 */
export async function register(): Promise<void> {
  // Not while building pages, and only in the Node.js runtime (the edge build drops this).
  if (process.env.NEXT_RUNTIME !== 'nodejs') return;
  if (process.env.NEXT_PHASE === 'phase-production-build') return;
  const { checkWebKey } = await import('./lib/fleetKey');
  await checkWebKey();
}
