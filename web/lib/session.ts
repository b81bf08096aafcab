import 'server-only';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { activeApiKey, type Principal } from '@quire/db/workspaces';
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { ApiError, errorResponse } from './api';
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
  const payload = Buffer.from(
    JSON.stringify({
      k: principal.apiKeyId,
      w: principal.workspaceId,
      e: now + SESSION_DAYS * 86_400_000,
    }),
  ).toString('base64url');
  return `${payload}.${sign(payload)}`;
}

function readSession(value: string | undefined): { k: number; w: number; e: number } | undefined {
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
  if (!session) return undefined;
  const principal = await activeApiKey(pool(), session.k);
  return principal && principal.workspaceId === session.w ? principal : undefined;
}

/** For pages and server actions: the signed-in principal, or a redirect to sign-in. */
export async function requirePrincipal(): Promise<Principal> {
  const principal = await currentPrincipal();
  if (!principal) redirect('/signin');
  return principal;
}

/**
 * The session cookie is `Secure` whenever the console is served over https: the configured
 * public URL says so, or the proxy in front says the request came over https.
 */
export function sessionCookieSecure(publicUrl: string, forwardedProto: string | null): boolean {
  return publicUrl.toLowerCase().startsWith('https:') || forwardedProto === 'https';
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
    const principal = await currentPrincipal();
    if (!principal) throw new ApiError(401, 'unauthenticated', 'sign in first');
    return await work(principal);
  } catch (error) {
    return errorResponse(error, request);
  }
}
