import { describe, expect, it } from 'vitest';
import { ProviderError } from '../../core/failures';
import {
  classifyHttpOutcome,
  detectContentRefusal,
  joinUrl,
  MAX_RETRY_AFTER_MS,
  parseRetryAfter,
  retryAfterMs,
  safeExcerpt,
} from '../../providers/http';

const opts = { provider: 'p', now: () => Date.parse('2030-01-01T00:00:00Z') };
const classOf = (status: number, body = '', headers?: Headers) =>
  classifyHttpOutcome({ kind: 'response', status, body, headers }, opts).category;

describe('Q3 HTTP outcome -> failure class (pure mapping)', () => {
  it('Q3 401 and 403 are auth; 402 is credit', () => {
    expect(classOf(401)).toBe('auth');
    expect(classOf(403)).toBe('auth');
    expect(classOf(402)).toBe('credit');
  });

  it('Q3 a body saying insufficient credit or quota is credit, even on 429 or 403', () => {
    expect(
      classOf(
        429,
        '{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}',
      ),
    ).toBe('credit');
    expect(classOf(403, 'Your credit balance is too low')).toBe('credit');
    expect(classOf(400, '{"error":"insufficient credits"}')).toBe('credit');
    expect(classOf(401, 'insufficient quota')).toBe('auth');
  });

  it('Q3 429 is outage and carries Retry-After in seconds or as an HTTP date', () => {
    const seconds = classifyHttpOutcome(
      { kind: 'response', status: 429, headers: new Headers({ 'retry-after': '17' }) },
      opts,
    );
    expect(seconds.category).toBe('outage');
    expect(seconds.retryAfterMs).toBe(17_000);
    const date = classifyHttpOutcome(
      {
        kind: 'response',
        status: 429,
        headers: new Headers({ 'retry-after': 'Tue, 01 Jan 2030 00:02:00 GMT' }),
      },
      opts,
    );
    expect(date.retryAfterMs).toBe(120_000);
    const none = classifyHttpOutcome(
      { kind: 'response', status: 429, headers: new Headers() },
      opts,
    );
    expect(none.retryAfterMs).toBeUndefined();
  });

  it('Q3 retry-after-ms wins; dates in the past clamp to 0; absurd delays cap at 24 h', () => {
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '1500', 'retry-after': '9' }), 0)).toBe(
      1500,
    );
    expect(parseRetryAfter('Mon, 01 Jan 2001 00:00:00 GMT', Date.now())).toBe(0);
    expect(parseRetryAfter('99999999', 0)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
    expect(parseRetryAfter('', 0)).toBeUndefined();
    expect(parseRetryAfter(null, 0)).toBeUndefined();
  });

  it('Q3 502/503/504/529 are outage (Retry-After honoured); 500, 501 and other 5xx are internal', () => {
    for (const s of [502, 503, 504, 529]) expect(classOf(s)).toBe('outage');
    const withRetry = classifyHttpOutcome(
      { kind: 'response', status: 503, headers: new Headers({ 'retry-after': '30' }) },
      opts,
    );
    expect(withRetry.retryAfterMs).toBe(30_000);
    for (const s of [500, 501, 505, 507]) expect(classOf(s)).toBe('internal');
  });

  it('Q3 400/404/413/415/422 are invalid; 408 is timeout; a redirect is internal', () => {
    for (const s of [400, 404, 405, 409, 410, 413, 415, 422]) expect(classOf(s)).toBe('invalid');
    expect(classOf(408)).toBe('timeout');
    expect(classOf(301)).toBe('internal');
  });

  it('Q3 a 400 naming a content policy or filter is content', () => {
    expect(classOf(400, '{"error":{"code":"content_policy_violation","message":"rejected"}}')).toBe(
      'content',
    );
    expect(classOf(400, '{"error":{"code":"content_filter"}}')).toBe('content');
  });

  it('Q3 transport failures: refused/reset/DNS are outage, others internal; timeout and malformed', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET', 'ENOTFOUND']) {
      expect(classifyHttpOutcome({ kind: 'transport', code }, opts).category).toBe('outage');
    }
    expect(
      classifyHttpOutcome({ kind: 'transport', code: 'ERR_TLS_CERT_ALTNAME_INVALID' }, opts)
        .category,
    ).toBe('internal');
    expect(classifyHttpOutcome({ kind: 'transport' }, opts).category).toBe('internal');
    expect(classifyHttpOutcome({ kind: 'timeout', timeoutMs: 5 }, opts).category).toBe('timeout');
    expect(classifyHttpOutcome({ kind: 'malformed', what: 'not JSON' }, opts).category).toBe(
      'internal',
    );
    expect(classifyHttpOutcome({ kind: 'refusal', what: 'refusal' }, opts).category).toBe(
      'content',
    );
  });

  it('Q3 the mapping always yields a ProviderError naming the provider and status', () => {
    const e = classifyHttpOutcome(
      { kind: 'response', status: 418, body: 'teapot' },
      { provider: 'acme' },
    );
    expect(e).toBeInstanceOf(ProviderError);
    expect(e.message).toMatch(/^acme: .*HTTP 418/);
  });
});

describe('Q3 content refusals in 2xx answers', () => {
  it('Q3 finish_reason content_filter, a refusal field and moderation flags are refusals', () => {
    expect(
      detectContentRefusal({ choices: [{ finish_reason: 'content_filter', message: {} }] }),
    ).toBeDefined();
    expect(
      detectContentRefusal({ choices: [{ finish_reason: 'stop', message: { refusal: 'no' } }] }),
    ).toBeDefined();
    expect(detectContentRefusal({ results: [{ flagged: true }] })).toBeDefined();
    expect(detectContentRefusal({ flagged: true })).toBeDefined();
  });

  it('Q3 an ordinary answer is not a refusal', () => {
    expect(
      detectContentRefusal({
        choices: [{ finish_reason: 'stop', message: { content: 'x', refusal: null } }],
      }),
    ).toBeUndefined();
    expect(detectContentRefusal({ results: [{ flagged: false }] })).toBeUndefined();
    expect(detectContentRefusal('text')).toBeUndefined();
  });
});

describe('Q4 error excerpts are short and redacted', () => {
  const planted = [
    'sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c',
    'Bearer abcdefghijklmnopqrstuvwxyz012345',
    'api_key=supersecretvalue123',
    'https://user:hunter2pass@provider.example/v1',
  ];

  it('Q4 planted secrets never survive into the excerpt or the ProviderError message', () => {
    for (const secret of planted) {
      const body = JSON.stringify({ error: { message: `Invalid key: ${secret} was rejected` } });
      for (const status of [400, 401, 402, 429, 500, 503]) {
        const e = classifyHttpOutcome({ kind: 'response', status, body }, opts);
        expect(e.message).not.toContain('4f9a8b7c6d5e4f3a2b1c');
        expect(e.message).not.toContain('abcdefghijklmnopqrstuvwxyz012345');
        expect(e.message).not.toContain('supersecretvalue123');
        expect(e.message).not.toContain('hunter2pass');
      }
    }
  });

  it('Q4 the key we sent is scrubbed even in a shape the patterns do not know', () => {
    const key = 'plainlookingkey42';
    const e = classifyHttpOutcome(
      { kind: 'response', status: 401, body: `key plainlookingkey42 unknown` },
      { provider: 'p', secrets: [key] },
    );
    expect(e.message).not.toContain(key);
  });

  it('Q4 the excerpt is bounded and never the body verbatim', () => {
    const body = `<html>${'provider internals '.repeat(500)}</html>`;
    const excerpt = safeExcerpt(body);
    expect(excerpt.length).toBeLessThanOrEqual(161);
    const e = classifyHttpOutcome({ kind: 'response', status: 500, body }, opts);
    expect(e.message.length).toBeLessThan(250);
  });

  it('Q4 a JSON error body contributes only its message', () => {
    const excerpt = safeExcerpt(
      JSON.stringify({ error: { message: 'short reason' }, trace: 'internal detail' }),
    );
    expect(excerpt).toBe('short reason');
  });

  it('joinUrl neither doubles nor drops slashes', () => {
    expect(joinUrl('http://h:1/', '/v1/x')).toBe('http://h:1/v1/x');
    expect(joinUrl('http://h:1/base', 'jobs')).toBe('http://h:1/base/jobs');
  });
});
