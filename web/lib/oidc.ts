import 'server-only';
import * as oidc from 'openid-client';
import { config } from './server';

/**
 * R2: the installation's OpenID Connect provider, through `openid-client` (authorization code
 * with PKCE, state and nonce). Discovered once per process; a provider on plain http is
 * allowed only on the loopback (development and tests).
 */
let discovered: Promise<oidc.Configuration> | undefined;

export function oidcEnabled(): boolean {
  const settings = config();
  return Boolean(settings.QUIRE_OIDC_ISSUER && settings.QUIRE_OIDC_CLIENT_ID);
}

export function oidcConfiguration(): Promise<oidc.Configuration> {
  const settings = config();
  const issuer = new URL(settings.QUIRE_OIDC_ISSUER!);
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname);
  discovered ??= oidc
    .discovery(
      issuer,
      settings.QUIRE_OIDC_CLIENT_ID!,
      undefined,
      // HTTP Basic: the client authentication every OAuth server must support (RFC 6749 2.3.1).
      settings.QUIRE_OIDC_CLIENT_SECRET
        ? oidc.ClientSecretBasic(settings.QUIRE_OIDC_CLIENT_SECRET)
        : oidc.None(),
      issuer.protocol === 'http:' && loopback ? { execute: [oidc.allowInsecureRequests] } : {},
    )
    .catch((error) => {
      discovered = undefined;
      throw error;
    });
  return discovered;
}

export const OIDC_REDIRECT_PATH = '/signin/oidc/callback';
export const OIDC_TRANSACTION_COOKIE = 'quire_oidc';

export function redirectUri(): string {
  return `${config().QUIRE_PUBLIC_URL.replace(/\/$/, '')}${OIDC_REDIRECT_PATH}`;
}

export interface OidcTransaction {
  verifier: string;
  state: string;
  nonce: string;
  /**
   * X2: the account session the person had when they started (its id, as secret as the
   * session cookie itself): the proof that they hold the account a first sign-in may link.
   */
  holder?: string;
}

/** The authorization URL and the transaction to keep (in a short-lived httpOnly cookie). */
export async function beginOidcSignIn(
  holder: string | undefined,
): Promise<{ url: URL; transaction: OidcTransaction }> {
  const configuration = await oidcConfiguration();
  const transaction: OidcTransaction = {
    verifier: oidc.randomPKCECodeVerifier(),
    state: oidc.randomState(),
    nonce: oidc.randomNonce(),
    ...(holder ? { holder } : {}),
  };
  const url = oidc.buildAuthorizationUrl(configuration, {
    redirect_uri: redirectUri(),
    scope: 'openid email profile',
    code_challenge: await oidc.calculatePKCECodeChallenge(transaction.verifier),
    code_challenge_method: 'S256',
    state: transaction.state,
    nonce: transaction.nonce,
  });
  return { url, transaction };
}

/** The ID token's claims after the code exchange (PKCE verifier, state and nonce checked). */
export async function finishOidcSignIn(
  callbackSearch: string,
  transaction: OidcTransaction,
): Promise<{ issuer: string; claims: Record<string, unknown> }> {
  const configuration = await oidcConfiguration();
  const tokens = await oidc.authorizationCodeGrant(
    configuration,
    new URL(`${redirectUri()}${callbackSearch}`),
    {
      pkceCodeVerifier: transaction.verifier,
      expectedState: transaction.state,
      expectedNonce: transaction.nonce,
      idTokenExpected: true,
    },
  );
  const claims = tokens.claims();
  if (!claims) throw new Error('no ID token');
  return { issuer: configuration.serverMetadata().issuer, claims: { ...claims } };
}
