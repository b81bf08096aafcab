import { describe, expect, it } from 'vitest';
import { deriveKey, openSecret, SecretBoxError, sealSecret } from '../../core/secretBox';

const master = 'm'.repeat(40);
const secret = 'a-webhook-secret-that-is-long-enough-0123456789';

describe('§12 webhook secrets encrypted at rest (AES-256-GCM, HKDF key)', () => {
  it('§12 sealing round-trips and never contains the clear secret', () => {
    const sealed = sealSecret(master, secret, 'sub-1');
    expect(sealed.includes(Buffer.from(secret))).toBe(false);
    expect(openSecret(master, sealed, 'sub-1')).toBe(secret);
    // A fresh IV each time.
    expect(sealSecret(master, secret, 'sub-1').equals(sealed)).toBe(false);
  });

  it('§12 a wrong key, another row context, or one flipped bit does not open', () => {
    const sealed = sealSecret(master, secret, 'sub-1');
    expect(() => openSecret('n'.repeat(40), sealed, 'sub-1')).toThrow(SecretBoxError);
    expect(() => openSecret(master, sealed, 'sub-2')).toThrow(SecretBoxError);
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] ?? 0) ^ 1;
    expect(() => openSecret(master, flipped, 'sub-1')).toThrow(SecretBoxError);
    expect(() => openSecret(master, Buffer.from([9, 1, 2]), 'sub-1')).toThrow(SecretBoxError);
  });

  it('§12 derived keys differ per purpose and per master secret', () => {
    expect(deriveKey(master, 'a').equals(deriveKey(master, 'b'))).toBe(false);
    expect(deriveKey(master, 'a').equals(deriveKey('x'.repeat(40), 'a'))).toBe(false);
    expect(deriveKey(master, 'a')).toHaveLength(32);
  });
});
