import { beginOidcSignIn, OIDC_TRANSACTION_COOKIE, oidcEnabled } from '@quire/web/lib/oidc';
import { config } from '@quire/web/lib/server';
import { accountOfSessionId, sessionCookieSecure, sessionIdOf } from '@quire/web/lib/session';
import { NextResponse } from 'next/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * R2: GET /signin/oidc sends the browser to the identity provider (authorization code with
 * PKCE). The verifier, state and nonce wait in a ten-minute httpOnly cookie, `Lax` because the
 * provider sends the browser back with a cross-site redirect. A person signed in to an account
 * starts it with their session's id kept there too (X2: the proof that links a first sign-in to
 * that account; the `Strict` session cookie itself does not come back with the provider).
 */
export async function GET(request: Request) {
  const signin = new URL('/signin', config().QUIRE_PUBLIC_URL);
  if (!oidcEnabled()) return NextResponse.redirect(signin, 303);
  try {
    const session = sessionIdOf(request);
    const holder = (await accountOfSessionId(session)) === null ? undefined : session;
    const { url, transaction } = await beginOidcSignIn(holder);
    const response = NextResponse.redirect(url, 303);
    response.cookies.set(OIDC_TRANSACTION_COOKIE, JSON.stringify(transaction), {
      httpOnly: true,
      sameSite: 'lax',
      secure: sessionCookieSecure(
        config().QUIRE_PUBLIC_URL,
        request.headers.get('x-forwarded-proto'),
      ),
      path: '/signin/oidc',
      maxAge: 600,
    });
    return response;
  } catch {
    signin.searchParams.set('error', 'oidc');
    return NextResponse.redirect(signin, 303);
  }
}
