/**
 * Runs once when a web server process starts (Next.js instrumentation). D1: the web app signs
 * sessions and page tokens and seals webhook secrets with the installation's key, so it
 * checks that key against PostgreSQL before serving, and exits when it is not the one. Then
 * it installs the guard that reads the client's address and refuses undecodable paths.
 */
export async function register(): Promise<void> {
  // Not while building pages, and only in the Node.js runtime (the edge build drops this).
  if (process.env.NEXT_RUNTIME !== 'nodejs') return;
  if (process.env.NEXT_PHASE === 'phase-production-build') return;
  const { checkWebKey } = await import('./lib/fleetKey');
  await checkWebKey();
  // X4, X5: after the key check, which ends the process on a configuration fault (a bad
  // QUIRE_TRUSTED_PROXIES among them) before anything is served.
  const [{ installEdgeGuard }, { config }] = await Promise.all([
    import('./lib/edgeGuard'),
    import('./lib/server'),
  ]);
  installEdgeGuard(config().QUIRE_TRUSTED_PROXIES);
}
