import 'server-only';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { activeOperatorKey, type OperatorPrincipal } from '@quire/db/operatorKeys';
import { activeApiKey, type Principal } from '@quire/db/workspaces';
import { cookies } from 'next/headers';
import { notFound, redirect } from 'next/navigation';
import { ApiError, errorResponse } from './api';
import { assertSameOrigin } from './origin';
import { config, pool } from './server';

/**
 * Console sessions: an httpOnly, same-site cookie naming the API key the editor signed in
 * with (by id, never the key itself), signed with the server secret and checked on every
 * page and action against the key still being active.
 */
export const SESSION_COOKIE = 'quire_session';
const SESSION_DAYS = 7;

function sign(payload: string, key = config().QUIRE_SECRET_KEY): string {
  return createHmac('sha256', `${key}:console-session`).update(payload).digest('base64url');
}

/** D1: a session signed with any of the installation's keys holds across a rotation. */
function signedByAnyKey(payload: string, mac: string): boolean {
  const given = Buffer.from(mac);
  return config().QUIRE_SECRET_KEYS.some((key) => {
    const expected = Buffer.from(sign(payload, key));
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
}

export function sessionValue(principal: Principal, now = Date.now()): string {
  return signedSession({
    k: principal.apiKeyId,
    w: principal.workspaceId,
    e: now + SESSION_DAYS * 86_400_000,
  });
}

/** M1: an operator's console session names the operator key (by id) and no workspace. */
export function operatorSessionValue(operator: OperatorPrincipal, now = Date.now()): string {
  return signedSession({ o: operator.operatorKeyId, e: now + SESSION_DAYS * 86_400_000 });
}

function signedSession(session: SessionPayload): string {
  const payload = Buffer.from(JSON.stringify(session)).toString('base64url');
  return `${payload}.${sign(payload)}`;
}

type SessionPayload = { k?: number; w?: number; o?: number; e: number };

function readSession(value: string | undefined): SessionPayload | undefined {
  if (!value) return undefined;
  const [payload, mac] = value.split('.');
  if (!payload || !mac) return undefined;
  if (!signedByAnyKey(payload, mac)) return undefined;
  try {
    const session = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return typeof session.e === 'number' && session.e > Date.now() ? session : undefined;
  } catch {
    return undefined;
  }
}

export async function currentPrincipal(): Promise<Principal | undefined> {
  const store = await cookies();
  const session = readSession(store.get(SESSION_COOKIE)?.value);
  if (typeof session?.k !== 'number') return undefined;
  const principal = await activeApiKey(pool(), session.k);
  return principal && principal.workspaceId === session.w ? principal : undefined;
}

/** M1: the operator signed in to the console, if the session is an operator's. */
export async function currentOperator(): Promise<OperatorPrincipal | undefined> {
  const store = await cookies();
  const session = readSession(store.get(SESSION_COOKIE)?.value);
  if (typeof session?.o !== 'number') return undefined;
  return activeOperatorKey(pool(), session.o);
}

/**
 * For workspace pages and server actions: the signed-in principal, or a redirect (operators to
 * their own view, everyone else to sign-in).
 */
export async function requirePrincipal(): Promise<Principal> {
  const principal = await currentPrincipal();
  if (!principal) redirect((await currentOperator()) ? '/operator' : '/signin');
  return principal;
}

/**
 * The session cookie is `Secure` whenever the console is served over https: the configured
 * public URL says so, or the proxy in front says the request came over https.
 */
export function sessionCookieSecure(publicUrl: string, forwardedProto: string | null): boolean {
  return publicUrl.toLowerCase().startsWith('https:') || forwardedProto === 'https';
}

/** For the operator view: the signed-in operator; a workspace session gets not-found (M1). */
export async function requireOperator(): Promise<OperatorPrincipal> {
  const operator = await currentOperator();
  if (operator) return operator;
  if (await currentPrincipal()) notFound();
  redirect('/signin');
}

export function sessionCookieOptions(secure: boolean) {
  return {
    httpOnly: true,
    sameSite: 'strict' as const,
    secure,
    path: '/',
    maxAge: SESSION_DAYS * 86_400,
  };
}

/** Runs a `/console-api` handler for the signed-in editor (session cookie); 401 without one. */
export async function withSession(
  request: Request,
  work: (principal: Principal) => Promise<Response>,
): Promise<Response> {
  try {
    assertSameOrigin(request, config().QUIRE_PUBLIC_URL);
    const principal = await currentPrincipal();
    if (!principal) throw new ApiError(401, 'unauthenticated', 'sign in first');
    return await work(principal);
  } catch (error) {
    return errorResponse(error, request);
  }
}
