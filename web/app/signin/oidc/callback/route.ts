import { DomainError } from '@quire/core/errors';
import { redactError } from '@quire/core/redact';
import {
  finishOidcSignIn,
  OIDC_TRANSACTION_COOKIE,
  type OidcTransaction,
} from '@quire/web/lib/oidc';
import { config } from '@quire/web/lib/server';
import { accountOfSessionId, startSession } from '@quire/web/lib/session';
import { signInWithOidcClaims } from '@quire/web/services/people';
import { cookies } from 'next/headers';
import { NextResponse } from 'next/server';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

function readTransaction(value: string | undefined): OidcTransaction | undefined {
  try {
    const parsed = JSON.parse(value ?? '');
    return typeof parsed.verifier === 'string' &&
      typeof parsed.state === 'string' &&
      typeof parsed.nonce === 'string' &&
      (parsed.holder === undefined || typeof parsed.holder === 'string')
      ? parsed
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * R2: the provider's redirect back. The code is exchanged (PKCE, state and nonce checked), the
 * claims become the account and its memberships (QUIRE_OIDC_ROLE_MAPPING), and a session
 * starts. The answer is a page that moves on by itself rather than a redirect: a redirect
 * would still count as the provider's cross-site navigation, and the `Strict` session cookie
 * would not be sent on it.
 */
export async function GET(request: Request) {
  const store = await cookies();
  const transaction = readTransaction(store.get(OIDC_TRANSACTION_COOKIE)?.value);
  store.delete({ name: OIDC_TRANSACTION_COOKIE, path: '/signin/oidc' });
  // X2: a refusal of the sign-in's own (an unverified email, a link not proven) keeps its code,
  // so the sign-in page says which; anything else is the generic `oidc`.
  const failed = (code = 'oidc') =>
    NextResponse.redirect(new URL(`/signin?error=${code}`, config().QUIRE_PUBLIC_URL), 303);
  if (!transaction) return failed();
  let landing: string;
  try {
    const { issuer, claims } = await finishOidcSignIn(new URL(request.url).search, transaction);
    const holder = await accountOfSessionId(transaction.holder);
    const signedIn = await signInWithOidcClaims(issuer, claims, holder);
    await startSession({ accountId: signedIn.accountId, workspaceId: signedIn.workspaceId });
    landing = signedIn.operator ? '/operator' : signedIn.workspaceId === null ? '/workspaces' : '/';
  } catch (error) {
    // The reason, redacted; never a token or a claim.
    console.error(
      JSON.stringify({
        level: 'warn',
        service: 'quire-web',
        msg: 'single sign-on failed',
        error: redactError(error),
        // The OAuth error code (`invalid_grant`, ...), which carries no secret.
        code:
          typeof (error as { error?: unknown })?.error === 'string'
            ? (error as { error: string }).error
            : undefined,
      }),
    );
    return failed(
      error instanceof DomainError && error.code.startsWith('oidc_') ? error.code : 'oidc',
    );
  }
  return new NextResponse(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${landing}"><title>Signing in</title></head><body><main><p><a href="${landing}">Continue to Quire</a></p></main></body></html>`,
    { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } },
  );
}
