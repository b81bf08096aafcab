import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newAttemptToken, sealToken, unsealToken } from '../../core/attemptToken';
import {
  ConfigError,
  type ConfigFiles,
  LOCAL_SECRET_KEY_FILE,
  parseConfig,
  requireSecretKeys,
} from '../../core/config';
import { KEY_MISMATCH } from '../../core/failures';
import { openSecret, sealSecret } from '../../core/secretBox';
import { keyFingerprint, openWithAnyKey, SecretKeyMismatchError } from '../../core/secretKeys';
import { sessionCookieSecure } from '../../web/lib/session';

const key = () => randomBytes(32).toString('hex');
const files = (map: Record<string, string>): ConfigFiles => ({ readFile: (path) => map[path] });

describe('one fleet configuration (D1)', () => {
  it('D1 outside production a missing key falls back to no public constant: the process refuses, naming the variable', () => {
    const config = parseConfig({}, { files: files({}) });
    expect(config.QUIRE_SECRET_KEY).toBe('');
    expect(config.QUIRE_SECRET_KEYS).toEqual([]);
    expect(() => requireSecretKeys(config)).toThrow(ConfigError);
    expect(() => requireSecretKeys(config)).toThrow(/QUIRE_SECRET_KEY is not set/);
    // Nothing seals with an empty key either.
    expect(() => sealToken(newAttemptToken(), config.QUIRE_SECRET_KEY)).toThrow(/32 characters/);
    expect(() => parseConfig({ NODE_ENV: 'production' }, { files: files({}) })).toThrow(
      /QUIRE_SECRET_KEY/,
    );
  });

  it('D1 outside production the key npm start generated is read from its file, so another worker joins the same stack', () => {
    const generated = key();
    const config = parseConfig({}, { files: files({ [LOCAL_SECRET_KEY_FILE]: `${generated}\n` }) });
    expect(config.QUIRE_SECRET_KEY).toBe(generated);
    expect(config.secretKeySource).toBe(LOCAL_SECRET_KEY_FILE);
    // In production only an explicit file counts.
    expect(() =>
      parseConfig(
        { NODE_ENV: 'production' },
        { files: files({ [LOCAL_SECRET_KEY_FILE]: generated }) },
      ),
    ).toThrow(/QUIRE_SECRET_KEY/);
    const explicit = parseConfig(
      { NODE_ENV: 'production', QUIRE_SECRET_KEY_FILE: '/run/secrets/quire' },
      { files: files({ '/run/secrets/quire': generated }) },
    );
    expect(explicit.QUIRE_SECRET_KEYS).toEqual([generated]);
    expect(() =>
      parseConfig({ QUIRE_SECRET_KEY_FILE: '/run/secrets/missing' }, { files: files({}) }),
    ).toThrow(/QUIRE_SECRET_KEY_FILE/);
  });

  it('D1 rotation: QUIRE_SECRET_KEYS lists keys newest first; a conflicting QUIRE_SECRET_KEY, a short or repeated key is refused without echoing it', () => {
    const [newer, older] = [key(), key()];
    const config = parseConfig({ QUIRE_SECRET_KEYS: ` ${newer} , ${older} ` });
    expect(config.QUIRE_SECRET_KEY).toBe(newer);
    expect(config.QUIRE_SECRET_KEYS).toEqual([newer, older]);
    expect(
      parseConfig({ QUIRE_SECRET_KEYS: newer, QUIRE_SECRET_KEY: newer }).QUIRE_SECRET_KEY,
    ).toBe(newer);
    expect(() => parseConfig({ QUIRE_SECRET_KEYS: newer, QUIRE_SECRET_KEY: older })).toThrow(
      /differs from the first key of QUIRE_SECRET_KEYS/,
    );
    const short = 'short-secret-never-echoed';
    expect(() => parseConfig({ QUIRE_SECRET_KEY: short })).toThrow(/32 characters or more/);
    expect(() => parseConfig({ QUIRE_SECRET_KEY: short })).not.toThrow(new RegExp(short));
    expect(() => parseConfig({ QUIRE_SECRET_KEYS: `${newer},${newer}` })).toThrow(/twice/);
  });

  it('D1 the first key seals and every listed key opens: tokens and webhook secrets sealed before a rotation still open after it', () => {
    const [newer, older, stranger] = [key(), key(), key()];
    const token = newAttemptToken();
    const sealedBefore = sealToken(token, older);
    const secretBefore = sealSecret(older, 'whsec-value', 'sub-1');
    const ring = [newer, older];
    expect(openWithAnyKey(ring, (k) => unsealToken(sealedBefore, k))).toEqual(token);
    expect(openWithAnyKey(ring, (k) => openSecret(k, secretBefore, 'sub-1'))).toBe('whsec-value');
    const error = (() => {
      try {
        openWithAnyKey([stranger], (k) => unsealToken(sealedBefore, k));
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(SecretKeyMismatchError);
    expect((error as Error).name).toBe(KEY_MISMATCH);
    expect((error as Error).message).not.toContain(stranger);
  });

  it('D1 a fingerprint tells keys apart without revealing them', () => {
    const k = key();
    expect(keyFingerprint(k)).toMatch(/^[0-9a-f]{64}$/);
    expect(keyFingerprint(k)).toBe(keyFingerprint(k));
    expect(keyFingerprint(k)).not.toBe(keyFingerprint(key()));
    expect(keyFingerprint(k)).not.toContain(k.slice(0, 16));
  });

  it('the session cookie is Secure whenever the public URL is https, whatever the proxy says', () => {
    expect(sessionCookieSecure('https://quire.example.org', null)).toBe(true);
    expect(sessionCookieSecure('HTTPS://quire.example.org', 'http')).toBe(true);
    expect(sessionCookieSecure('http://localhost:3000', 'https')).toBe(true);
    expect(sessionCookieSecure('http://localhost:3000', null)).toBe(false);
  });
});
