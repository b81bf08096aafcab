import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startTemporalToken } from '../../net/temporalToken';

/**
 * R4: the refresh of Quire's Temporal token, with the provider's answers scripted (fault
 * injection: the real provider's path is test/integration/temporalToken.test.ts).
 */
const SETTINGS = {
  TEMPORAL_OAUTH_TOKEN_URL: 'http://idp.invalid/oauth2/token',
  TEMPORAL_OAUTH_CLIENT_ID: 'quire services',
  TEMPORAL_OAUTH_CLIENT_SECRET: 's3cr:et',
  TEMPORAL_OAUTH_AUDIENCE: 'temporal',
};

type Answer = { status: number; body: Record<string, unknown> } | 'down';

function scriptedProvider(answers: Answer[]) {
  const requests: Array<{ authorization: string; body: string }> = [];
  const fetchImpl = (async (_url: string, init: RequestInit) => {
    const headers = init.headers as Record<string, string>;
    requests.push({ authorization: headers.authorization ?? '', body: String(init.body) });
    const answer = answers.shift() ?? 'down';
    if (answer === 'down') throw new TypeError('fetch failed');
    return new Response(JSON.stringify(answer.body), { status: answer.status });
  }) as unknown as typeof fetch;
  return { fetchImpl, requests };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('refreshing the Temporal token (R4)', () => {
  it('R4 asks with client_secret_basic and the audience, refreshes at two thirds of the life, and keeps the token through a provider outage', async () => {
    const { fetchImpl, requests } = scriptedProvider([
      { status: 200, body: { access_token: 'first', expires_in: 60 } },
      'down',
      { status: 503, body: { error: 'temporarily_unavailable' } },
      { status: 200, body: { access_token: 'second', expires_in: 60 } },
    ]);
    const warnings: Array<Record<string, unknown>> = [];
    const logger = {
      info() {},
      error() {},
      warn: (fields: Record<string, unknown>) => warnings.push(fields),
    };
    const token = await startTemporalToken(SETTINGS, { fetch: fetchImpl, logger });
    expect(token?.current()).toBe('first');
    // Both parts form-encoded before Base64 (RFC 6749 §2.3.1).
    expect(requests[0]?.authorization).toBe(
      `Basic ${Buffer.from('quire%20services:s3cr%3Aet').toString('base64')}`,
    );
    expect(new URLSearchParams(requests[0]?.body).get('grant_type')).toBe('client_credentials');
    expect(new URLSearchParams(requests[0]?.body).get('audience')).toBe('temporal');

    const seen: string[] = [];
    token?.onRefresh((fresh) => seen.push(fresh));
    await vi.advanceTimersByTimeAsync(39_000);
    expect(requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_500); // 40 s: the first refresh, refused (down)
    expect(requests).toHaveLength(2);
    expect(token?.current()).toBe('first');
    await vi.advanceTimersByTimeAsync(5_000); // the retry: 503
    expect(requests).toHaveLength(3);
    expect(token?.current()).toBe('first');
    await vi.advanceTimersByTimeAsync(10_000); // backed off, then answered
    expect(requests).toHaveLength(4);
    expect(token?.current()).toBe('second');
    expect(seen).toEqual(['second']);
    // The warnings say how long the current token lasts, never the secret or a token.
    expect(warnings).toHaveLength(2);
    expect(JSON.stringify(warnings)).not.toMatch(/s3cr|first|second/);
    expect(String(warnings[1]?.err)).toContain('temporarily_unavailable');
    token?.close();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(requests).toHaveLength(4);
  });
});
