import type { Logger } from '../core/logger';

/**
 * R4: Quire's own processes reach a Temporal frontend that checks callers' JWTs with a token
 * of their own: the OAuth 2.0 client-credentials grant (RFC 6749 §4.4) of Quire's client at
 * the installation's identity provider. The first token is fetched before the process
 * connects, so a refused client stops the process at start; later tokens are fetched at two
 * thirds of each one's life, and a failed refresh keeps the current token while it is valid
 * and tries again with backoff, so a short provider outage costs no call.
 */
export interface TemporalTokenSettings {
  TEMPORAL_OAUTH_TOKEN_URL?: string;
  TEMPORAL_OAUTH_CLIENT_ID?: string;
  TEMPORAL_OAUTH_CLIENT_SECRET?: string;
  TEMPORAL_OAUTH_SCOPE?: string;
  TEMPORAL_OAUTH_AUDIENCE?: string;
}

export interface TemporalToken {
  /** The access token to send as `Authorization: Bearer …`. */
  current(): string;
  /** Called with each new token (a native connection's `setApiKey`). */
  onRefresh(listener: (token: string) => void): void;
  close(): void;
}

export class TemporalTokenError extends Error {
  readonly code = 'temporal_token_refused';
}

interface Issued {
  token: string;
  /** Seconds the provider says the token lives; undefined: it did not say. */
  expiresIn: number | undefined;
}

const FALLBACK_LIFETIME_S = 300;
const MIN_REFRESH_MS = 5_000;
const MAX_RETRY_MS = 30_000;

async function requestToken(
  settings: Required<Pick<TemporalTokenSettings, 'TEMPORAL_OAUTH_TOKEN_URL'>> &
    TemporalTokenSettings,
  fetchImpl: typeof fetch,
): Promise<Issued> {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (settings.TEMPORAL_OAUTH_SCOPE) form.set('scope', settings.TEMPORAL_OAUTH_SCOPE);
  if (settings.TEMPORAL_OAUTH_AUDIENCE) form.set('audience', settings.TEMPORAL_OAUTH_AUDIENCE);
  // client_secret_basic: both parts form-encoded first (RFC 6749 §2.3.1).
  const basic = Buffer.from(
    `${encodeURIComponent(settings.TEMPORAL_OAUTH_CLIENT_ID ?? '')}:${encodeURIComponent(settings.TEMPORAL_OAUTH_CLIENT_SECRET ?? '')}`,
  ).toString('base64');
  const response = await fetchImpl(settings.TEMPORAL_OAUTH_TOKEN_URL, {
    method: 'POST',
    headers: {
      authorization: `Basic ${basic}`,
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    },
    body: form,
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json().catch(() => ({}))) as {
    access_token?: unknown;
    expires_in?: unknown;
    error?: unknown;
  };
  if (!response.ok || typeof body.access_token !== 'string' || !body.access_token) {
    // The provider's error code only: never the response's other fields, never the secret.
    const reason = typeof body.error === 'string' ? body.error.slice(0, 64) : 'no access_token';
    throw new TemporalTokenError(
      `the identity provider refused Quire's Temporal client (${response.status}, ${reason})`,
    );
  }
  const expiresIn =
    typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : undefined;
  return { token: body.access_token, expiresIn };
}

/** Undefined when no client is configured: the frontend is reached without a token. */
export async function startTemporalToken(
  settings: TemporalTokenSettings,
  options: { logger?: Logger; fetch?: typeof fetch } = {},
): Promise<TemporalToken | undefined> {
  const url = settings.TEMPORAL_OAUTH_TOKEN_URL;
  if (!url) return undefined;
  const fetchImpl = options.fetch ?? fetch;
  const wanted = { ...settings, TEMPORAL_OAUTH_TOKEN_URL: url };
  let issued = await requestToken(wanted, fetchImpl);
  let expiresAt = Date.now() + (issued.expiresIn ?? FALLBACK_LIFETIME_S) * 1000;
  const listeners: Array<(token: string) => void> = [];
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const schedule = (delayMs: number) => {
    if (closed) return;
    timer = setTimeout(refresh, Math.max(MIN_REFRESH_MS, delayMs));
    // A token refresh never keeps a process alive that is otherwise done.
    timer.unref();
  };
  const lifetimeMs = () => (issued.expiresIn ?? FALLBACK_LIFETIME_S) * 1000;
  let retryMs = MIN_REFRESH_MS;
  async function refresh() {
    try {
      issued = await requestToken(wanted, fetchImpl);
      expiresAt = Date.now() + lifetimeMs();
      retryMs = MIN_REFRESH_MS;
      for (const listener of listeners) listener(issued.token);
      schedule((lifetimeMs() * 2) / 3);
    } catch (error) {
      options.logger?.warn(
        {
          err: error instanceof TemporalTokenError ? error.message : 'token request failed',
          validForMs: Math.max(0, expiresAt - Date.now()),
        },
        'could not refresh the Temporal token; keeping the current one',
      );
      schedule(Math.min(retryMs, Math.max(MIN_REFRESH_MS, expiresAt - Date.now())));
      retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
    }
  }
  schedule((lifetimeMs() * 2) / 3);

  return {
    current: () => issued.token,
    onRefresh(listener) {
      listeners.push(listener);
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
    },
  };
}
