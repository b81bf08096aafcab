import { beginOidcSignIn, OIDC_TRANSACTION_COOKIE, oidcEnabled } from '@quire/web/lib/oidc';
import { config } from '@quire/web/lib/server';
import { sessionCookieSecure } from '@quire/web/lib/session';
import { NextResponse } from 'next/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * R2: GET /signin/oidc sends the browser to the identity provider (authorization code with
 * PKCE). The verifier, state and nonce wait in a ten-minute httpOnly cookie, `Lax` because the
 * provider sends the browser back with a cross-site redirect.
 */
export async function GET(request: Request) {
  const signin = new URL('/signin', config().QUIRE_PUBLIC_URL);
  if (!oidcEnabled()) return NextResponse.redirect(signin, 303);
  try {
    const { url, transaction } = await beginOidcSignIn();
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
