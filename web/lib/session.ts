import 'server-only';
import { type Action, type Principal, permits } from '@quire/core/roles';
import type { OperatorPrincipal } from '@quire/db/operatorKeys';
import {
  createSession,
  endSession,
  isSessionIdShape,
  type LiveSession,
  moveSession,
  type SessionSubject,
  touchSession,
} from '@quire/db/sessions';
import { refusalSentence } from '@quire/web/services/access';
import { cookies, headers } from 'next/headers';
import { forbidden, notFound, redirect } from 'next/navigation';
import { cache } from 'react';
import { recordActionRefusal } from './actionRefusal';
import { ApiError, errorResponse } from './api';
import { assertSameOrigin } from './origin';
import { config, pool } from './server';

/**
 * R3: console sessions are rows of PostgreSQL (db/sessions.ts). The cookie holds only the
 * session's random id; every page, action and console route of every replica reads the row,
 * so sign-out, removing a member, disabling an account or revoking a key ends the session at
 * its next request wherever it is. Idle and absolute lifetimes are settings
 * (QUIRE_SESSION_IDLE_SECONDS, QUIRE_SESSION_ABSOLUTE_SECONDS).
 */
export const SESSION_COOKIE = 'quire_session';

/** The live session of this request (read once per request), if any. */
export const currentSession = cache(async (): Promise<LiveSession | undefined> => {
  const id = (await cookies()).get(SESSION_COOKIE)?.value;
  if (!isSessionIdShape(id)) return undefined;
  return touchSession(pool(), id, config().QUIRE_SESSION_IDLE_SECONDS);
});

/**
 * X2: the account whose live session `id` is (null: none, ended, or a key's). Single sign-on
 * asks it of the session the person had when they started, as their proof of holding it.
 */
export async function accountOfSessionId(id: string | undefined): Promise<number | null> {
  if (!isSessionIdShape(id)) return null;
  const session = await touchSession(pool(), id, config().QUIRE_SESSION_IDLE_SECONDS);
  return session?.kind === 'account' ? session.accountId : null;
}

/** R1: the workspace principal a session acts as: a member with their role, or a key by scope. */
export function principalOfSession(session: LiveSession | undefined): Principal | undefined {
  if (session?.kind === 'account') {
    if (session.workspaceId === null || !session.role) return undefined;
    return {
      workspaceId: session.workspaceId,
      actor: { kind: 'account', id: session.accountId, name: session.name },
      grant: { kind: 'role', role: session.role },
    };
  }
  if (session?.kind === 'apiKey') {
    return {
      workspaceId: session.workspaceId,
      actor: {
        kind: 'apiKey',
        id: session.apiKeyId,
        name: session.label ?? `key ${session.apiKeyId}`,
      },
      grant: { kind: 'key', scope: session.scope },
    };
  }
  return undefined;
}

/** M1, R1: the operator a session is: an operator account in the operator view, or an operator key. */
export function operatorOfSession(session: LiveSession | undefined): OperatorPrincipal | undefined {
  if (session?.kind === 'operatorKey') return { operatorKeyId: session.operatorKeyId };
  if (session?.kind === 'account' && session.operator && session.workspaceId === null) {
    return { accountId: session.accountId, name: session.name };
  }
  return undefined;
}

export async function currentPrincipal(): Promise<Principal | undefined> {
  return principalOfSession(await currentSession());
}

/** M1: the operator signed in to the console, if the session is an operator's. */
export async function currentOperator(): Promise<OperatorPrincipal | undefined> {
  return operatorOfSession(await currentSession());
}

/**
 * For workspace pages and server actions: the signed-in principal, or a redirect (operators to
 * their own view, an account with no workspace to the list of its workspaces, everyone else to
 * sign-in).
 */
export async function requirePrincipal(): Promise<Principal> {
  const session = await currentSession();
  const principal = principalOfSession(session);
  if (principal) return principal;
  if (operatorOfSession(session)) redirect('/operator');
  if (session?.kind === 'account') redirect('/workspaces');
  redirect('/signin');
}

/**
 * R8: for a server action that does one act of core/roles.ts: the signed-in principal, when
 * its role (or key scope) allows the act. The console never offers an act the role does not
 * allow; one posted anyway ends here, before anything is read or changed, as a 403 that
 * app/forbidden.tsx answers with the code and its sentence. Next treats `forbidden()` as an
 * answer, not a failure: nothing is logged, no error page.
 */
export async function requireAct(act: Action): Promise<Principal> {
  const principal = await requirePrincipal();
  if (!permits(principal.grant, act)) {
    // R8: a posted action answers the refusal as JSON (web/lib/actionRefusal.ts).
    recordActionRefusal(refusalSentence(principal, act));
    forbidden();
  }
  return principal;
}

/** For the operator view: the signed-in operator; a workspace session gets not-found (M1). */
export async function requireOperator(): Promise<OperatorPrincipal> {
  const session = await currentSession();
  const operator = operatorOfSession(session);
  if (operator) return operator;
  if (session) notFound();
  redirect('/signin');
}

/**
 * The session cookie is `Secure` whenever the console is served over https: the configured
 * public URL says so, or the proxy in front says the request came over https.
 */
export function sessionCookieSecure(publicUrl: string, forwardedProto: string | null): boolean {
  return publicUrl.toLowerCase().startsWith('https:') || forwardedProto === 'https';
}

export function sessionCookieOptions(secure: boolean, maxAgeSeconds: number) {
  return {
    httpOnly: true,
    sameSite: 'strict' as const,
    secure,
    path: '/',
    maxAge: maxAgeSeconds,
  };
}

/**
 * Signs in: a new session row, its id in the cookie. For server actions and route handlers
 * (the only places a cookie can be set).
 */
export async function startSession(subject: SessionSubject): Promise<void> {
  const absolute = config().QUIRE_SESSION_ABSOLUTE_SECONDS;
  const id = await createSession(pool(), subject, absolute);
  const proto = (await headers()).get('x-forwarded-proto');
  (await cookies()).set(
    SESSION_COOKIE,
    id,
    sessionCookieOptions(sessionCookieSecure(config().QUIRE_PUBLIC_URL, proto), absolute),
  );
}

/** R3: sign-out ends the session row (on every replica at once), then clears the cookie. */
export async function endCurrentSession(): Promise<void> {
  const store = await cookies();
  const id = store.get(SESSION_COOKIE)?.value;
  if (isSessionIdShape(id)) await endSession(pool(), id);
  store.delete(SESSION_COOKIE);
}

/** An account's session moves to another of its workspaces (membership checked by the caller). */
export async function switchSessionWorkspace(workspaceId: number | null): Promise<void> {
  const id = (await cookies()).get(SESSION_COOKIE)?.value;
  if (isSessionIdShape(id)) await moveSession(pool(), id, workspaceId);
}

/** The session id a request's Cookie header carries (route handlers read it from the request). */
export function sessionIdOf(request: Request): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === SESSION_COOKIE) return value.join('=');
  }
  return undefined;
}

/**
 * Runs a `/console-api` handler for the signed-in member or key (session cookie); 401 without
 * one. The session is read from the request itself, so the handler runs the same in process.
 */
export async function withSession(
  request: Request,
  work: (principal: Principal) => Promise<Response>,
): Promise<Response> {
  try {
    assertSameOrigin(request, config().QUIRE_PUBLIC_URL);
    const id = sessionIdOf(request);
    const session = isSessionIdShape(id)
      ? await touchSession(pool(), id, config().QUIRE_SESSION_IDLE_SECONDS)
      : undefined;
    const principal = principalOfSession(session);
    if (!principal) throw new ApiError('unauthenticated', 'sign in first');
    return await work(principal);
  } catch (error) {
    return errorResponse(error, request);
  }
}
