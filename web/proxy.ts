import { loadConfig } from '@quire/core/config';
import { type NextRequest, NextResponse } from 'next/server';
import { originRefusal } from './lib/origin';
import { DATA_POLICY, pagePolicy } from './lib/securityHeaders';

/**
 * R6, X5, in front of every console page and every server action (Next posts an action to the
 * page's own path, and runs one posted to any other path it answers): a state-changing request must come from the public URL's origin, else
 * 403 `origin_mismatch` before the action runs; and each page gets its Content-Security-Policy
 * with a fresh nonce.
 *
 * Next's own server-action check compares Origin with the Host header and lets a request
 * without Origin through; `serverActions.allowedOrigins` is left unset so it never widens.
 *
 * Route handlers are not matched: Next buffers the body of every request its proxy sees (and
 * cuts it at `proxyClientMaxBodySize`, 10 MB), which an upload must never be. Their Origin
 * check is `withSession` (`/console-api`; `/api/v1` is bearer keys, no cookie), and their
 * headers come from next.config.ts.
 */

let settings: { publicUrl: string; development: boolean } | undefined;

/** Read once from the one settings module, like every other process setting. */
function proxySettings() {
  if (!settings) {
    const config = loadConfig();
    settings = {
      publicUrl: config.QUIRE_PUBLIC_URL,
      development: config.NODE_ENV === 'development',
    };
  }
  return settings;
}

export function proxy(request: NextRequest) {
  const refused = originRefusal(request.method, request.headers, proxySettings().publicUrl);
  if (refused) {
    return NextResponse.json(
      { error: { code: refused.code, message: refused.message } },
      { status: refused.status, headers: { 'Content-Security-Policy': DATA_POLICY } },
    );
  }
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString('base64');
  const policy = pagePolicy(nonce, proxySettings().development);
  // Next reads the nonce from the request's policy and sets it on the scripts it renders.
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set('content-security-policy', policy);
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  response.headers.set('Content-Security-Policy', policy);
  return response;
}

export const config = {
  matcher: [
    // Pages only (see above): not the route handlers, not the build's static files. Every
    // other path, a 404 included, is a page of the console and gets the page policy (X5).
    '/((?!(?:api|console-api|iiif)(?:/|$)|(?:healthz|readyz|favicon\\.ico)$|_next/static/|_next/image$).*)',
    // X5: Next runs a server action posted to any path its router answers, a route handler's
    // 404 included; such a post carries `Next-Action`, so the Origin rule sees it wherever.
    { source: '/:path*', has: [{ type: 'header', key: 'next-action' }] },
  ],
};
