import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../core/config';
import { DomainError } from '../../core/errors';
import { checkJobRequest } from '../../core/jobOptions';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../../core/jsonDepth';
import { type SignInLimits, signInWaitMs } from '../../core/signinDelay';
import { clientAddressOf, parseTrustedProxies } from '../../core/trustedProxies';

/** X4, X5: the pure rules behind the edges (addresses, waits, JSON depth, option names). */
const BASE = { DATABASE_URL: 'postgres://localhost/quire' };

describe('the client address comes from trusted proxies only (X4)', () => {
  const none = parseTrustedProxies('');
  const proxies = parseTrustedProxies('10.0.0.0/8, 192.168.1.5, ::1, fd00::/8');

  it('X4 without trusted proxies the socket peer is the client whatever X-Forwarded-For says', () => {
    expect(clientAddressOf('127.0.0.1', '203.0.113.1', none)).toBe('127.0.0.1');
    expect(clientAddressOf('::ffff:127.0.0.1', '203.0.113.1, 10.0.0.1', none)).toBe('127.0.0.1');
    expect(clientAddressOf(undefined, '203.0.113.1', none)).toBe('unknown');
  });

  it('X4 from a trusted proxy the right-most address no trusted proxy wrote is the client', () => {
    expect(clientAddressOf('10.1.2.3', '203.0.113.1', proxies)).toBe('203.0.113.1');
    // A client-written entry left of the real one is never read.
    expect(clientAddressOf('10.1.2.3', '198.51.100.9, 203.0.113.1', proxies)).toBe('203.0.113.1');
    // Proxies in a chain are skipped, right to left.
    expect(clientAddressOf('::1', '203.0.113.1, 192.168.1.5, 10.9.9.9', proxies)).toBe(
      '203.0.113.1',
    );
    // A peer that is not a trusted proxy is the client, its header notwithstanding.
    expect(clientAddressOf('198.51.100.2', '10.0.0.1', proxies)).toBe('198.51.100.2');
    // Garbage in the chain stops the walk at the last proxy that wrote an address.
    expect(clientAddressOf('10.1.2.3', 'not-an-address', proxies)).toBe('10.1.2.3');
    expect(clientAddressOf('fd00::1', '2001:db8::7', proxies)).toBe('2001:db8::7');
  });

  it('X4 a QUIRE_TRUSTED_PROXIES entry that is not an address or CIDR refuses the configuration', () => {
    for (const bad of ['10.0.0.0/33', 'proxy.local', '10.0.0.1/8/1', '::1/129', '10.0.0.0/x']) {
      expect(() => parseConfig({ ...BASE, QUIRE_TRUSTED_PROXIES: bad }), bad).toThrow(ConfigError);
      expect(() => parseConfig({ ...BASE, QUIRE_TRUSTED_PROXIES: bad }), bad).toThrow(
        /QUIRE_TRUSTED_PROXIES/,
      );
    }
    expect(parseConfig({ ...BASE, QUIRE_TRUSTED_PROXIES: '10.0.0.0/8,::1' })).toMatchObject({
      QUIRE_TRUSTED_PROXIES: '10.0.0.0/8,::1',
    });
  });
});

describe('sign-in waits grow instead of locking (X4)', () => {
  const limits: SignInLimits = {
    perAccount: 3,
    perAddress: 10,
    delayMs: 1_000,
    maxDelayMs: 60_000,
  };
  const at = (pair: number, address: number, agoMs = 0) =>
    signInWaitMs({ pair, pairAgoMs: agoMs, address, addressAgoMs: agoMs }, limits);

  it('X4 below both limits nothing waits; past one each failure doubles the wait, up to the cap', () => {
    expect(at(2, 9)).toBe(0);
    expect(at(3, 3)).toBe(1_000);
    expect(at(4, 4)).toBe(2_000);
    expect(at(6, 6)).toBe(8_000);
    expect(at(40, 40)).toBe(60_000);
    // The address limit counts every account from the address.
    expect(at(0, 11)).toBe(2_000);
  });

  it('X4 the wait runs from the newest failure and then the next try is let through', () => {
    expect(at(4, 4, 1_500)).toBe(500);
    expect(at(4, 4, 2_000)).toBe(0);
  });
});

describe('JSON depth and job options (X5)', () => {
  it(`X5 JSON nested past ${MAX_JSON_DEPTH} levels is found from the text; brackets in strings do not count`, () => {
    const nested = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonTooDeep(`{"a":${nested(8_000)}}`)).toBe(true);
    expect(jsonTooDeep(JSON.stringify({ text: '['.repeat(1_000), quote: '\\"[[[' }))).toBe(false);
  });

  it('X5 an option key Quire does not know is refused by name (422 unknown_option)', () => {
    const refusal = (options: Record<string, unknown>) => {
      try {
        checkJobRequest({ provider: 'auto', options }, ['tesseract']);
        return undefined;
      } catch (error) {
        return error as DomainError;
      }
    };
    const unknown = refusal({ overwriteHumanLines: true, temperature: 2 });
    expect(unknown).toBeInstanceOf(DomainError);
    expect(unknown?.code).toBe('unknown_option');
    expect(unknown?.message).toContain('options.temperature');
    expect(refusal({ overwriteHumanLines: false })).toBeUndefined();
  });
});
