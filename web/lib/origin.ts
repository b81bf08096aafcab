import { ApiError } from './errors';

/**
 * R6: the console's requests that change something must come from the console itself. The
 * session cookie is SameSite=Strict, but "same site" spans every port of the host (the Temporal
 * UI, a second replica, anything else served there), so the cookie alone does not say which
 * page sent the request; the browser's `Origin` header does.
 *
 * The rule: a POST, PUT, PATCH or DELETE is accepted when its `Origin` is the origin of the
 * configured public URL (QUIRE_PUBLIC_URL: scheme, host and port). Without an `Origin` (old
 * browsers on some same-origin requests, hand-made clients) it is accepted only when the
 * browser says `Sec-Fetch-Site: same-origin`; anything else is refused with 403
 * `origin_mismatch`, before any work. A hand-made client has the API and its bearer keys
 * (`/api/v1`), which carry no ambient credential and are not checked here.
 *
 * No I/O and no server-only imports: the request proxy (web/proxy.ts) and `withSession` both
 * call it.
 */

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isStateChanging(method: string): boolean {
  return !SAFE_METHODS.has(method.toUpperCase());
}

/** The origin (`scheme://host[:port]`) of the public URL, as browsers spell it. */
export function publicOrigin(publicUrl: string): string {
  return new URL(publicUrl).origin;
}

/** Why the request is refused, or undefined when it may proceed. */
export function originRefusal(
  method: string,
  headers: Headers,
  publicUrl: string,
): ApiError | undefined {
  if (!isStateChanging(method)) return undefined;
  const expected = publicOrigin(publicUrl);
  const origin = headers.get('origin');
  if (origin === null) {
    if (headers.get('sec-fetch-site') === 'same-origin') return undefined;
    return new ApiError(
      'origin_mismatch',
      `a change from the console must come from ${expected}: the request names no Origin`,
    );
  }
  if (origin === expected) return undefined;
  return new ApiError(
    'origin_mismatch',
    `a change from the console must come from ${expected} (QUIRE_PUBLIC_URL)`,
  );
}

/** Throws the 403 `origin_mismatch` refusal for a cross-origin state-changing request. */
export function assertSameOrigin(request: Request, publicUrl: string): void {
  const refused = originRefusal(request.method, request.headers, publicUrl);
  if (refused) throw refused;
}
