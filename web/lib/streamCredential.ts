import 'server-only';
import type { Principal } from '@quire/core/roles';
import { isSessionIdShape, touchSession } from '@quire/db/sessions';
import { activeApiKey } from '@quire/db/workspaces';
import { config, pool } from './server';
import { sessionIdOf } from './session';

/**
 * X3: what opened a stream, checked again while the stream is open. A stream outlives the
 * request that authenticated it, so revoking a key, ending a session, removing a member or
 * disabling an account would otherwise leave it delivering for as long as it stays open.
 * Every open stream re-reads its credential every QUIRE_STREAM_RECHECK_MS (2 s by default)
 * and ends when the credential no longer gives the same workspace.
 */
export type StreamCredential =
  | { kind: 'apiKey'; apiKeyId: number; workspaceId: number }
  | { kind: 'session'; sessionId: string; workspaceId: number };

/** How the request that opens a stream was let in: its bearer key, else its session cookie. */
export function streamCredentialOf(request: Request, principal: Principal): StreamCredential {
  const workspaceId = principal.workspaceId;
  if (request.headers.get('authorization') !== null && principal.actor.kind === 'apiKey') {
    return { kind: 'apiKey', apiKeyId: principal.actor.id, workspaceId };
  }
  return { kind: 'session', sessionId: sessionIdOf(request) ?? '', workspaceId };
}

/** Whether the credential still acts in its workspace. */
export async function credentialHolds(credential: StreamCredential): Promise<boolean> {
  if (credential.kind === 'apiKey') {
    const key = await activeApiKey(pool(), credential.apiKeyId);
    return key?.workspaceId === credential.workspaceId;
  }
  if (!isSessionIdShape(credential.sessionId)) return false;
  const session = await touchSession(
    pool(),
    credential.sessionId,
    config().QUIRE_SESSION_IDLE_SECONDS,
  );
  if (session?.kind === 'account') {
    return session.workspaceId === credential.workspaceId && session.role !== undefined;
  }
  return session?.kind === 'apiKey' && session.workspaceId === credential.workspaceId;
}

/**
 * Re-checks the credential on a timer and calls `end` once it fails. A check that cannot be
 * made (PostgreSQL away) ends the stream too: the client reconnects and is checked afresh.
 * Returns the function that stops the timer.
 */
export function watchCredential(credential: StreamCredential, end: () => void): () => void {
  let stopped = false;
  const timer = setInterval(async () => {
    let holds = false;
    try {
      holds = await credentialHolds(credential);
    } catch {
      holds = false;
    }
    if (!holds && !stopped) {
      stopped = true;
      clearInterval(timer);
      end();
    }
  }, config().QUIRE_STREAM_RECHECK_MS);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
