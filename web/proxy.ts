import { loadConfig } from '@quire/core/config';
import { type NextRequest, NextResponse } from 'next/server';
import { originRefusal } from './lib/origin';
import { DATA_POLICY, isDataPath, pagePolicy } from './lib/securityHeaders';

/**
 * R6, in front of every request: state-changing console requests (the `/console-api` routes
 * and every server action, which Next posts to the page's own path) must come from the
 * public URL's origin, else 403 `origin_mismatch` before any handler runs; and each response
 * gets its Content-Security-Policy (a fresh nonce per page). `/api/v1` is authenticated by
 * bearer keys, never by the cookie, so its origin is not checked.
 *
 * Next's own server-action check compares Origin with the Host header and lets a request
 * without Origin through; `serverActions.allowedOrigins` is left unset so it never widens.
 */

let publicUrl: string | undefined;

function configuredPublicUrl(): string {
  publicUrl ??= loadConfig().QUIRE_PUBLIC_URL;
  return publicUrl;
}

export function proxy(request: NextRequest) {
  const { pathname } = request.nextUrl;
  if (!pathname.startsWith('/api/')) {
    const refused = originRefusal(request.method, request.headers, configuredPublicUrl());
    if (refused) {
      return NextResponse.json(
        { error: { code: refused.code, message: refused.message } },
        { status: refused.status, headers: { 'Content-Security-Policy': DATA_POLICY } },
      );
    }
  }
  if (isDataPath(pathname)) {
    const response = NextResponse.next();
    response.headers.set('Content-Security-Policy', DATA_POLICY);
    return response;
  }
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString('base64');
  const policy = pagePolicy(nonce, process.env.NODE_ENV === 'development');
  // Next reads the nonce from the request's policy and sets it on the scripts it renders.
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set('content-security-policy', policy);
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  response.headers.set('Content-Security-Policy', policy);
  return response;
}

export const config = {
  matcher: ['/((?!_next/static|_next/image|favicon.ico).*)'],
};
