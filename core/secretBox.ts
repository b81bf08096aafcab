import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Webhook secrets at rest (§12): AES-256-GCM under a key derived from QUIRE_SECRET_KEY with
 * HKDF-SHA256, one derived key per purpose so a page-token key never decrypts a secret.
 * Sealed layout: version (1 byte) | IV (12) | tag (16) | ciphertext. An optional context
 * (the subscription id) is bound as associated data, so a ciphertext copied onto another
 * row does not open there.
 */
const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HKDF_SALT = Buffer.from('quire/hkdf-salt/v1', 'utf8');

export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

/** A 32-byte key for `purpose`, derived from the process secret. */
export function deriveKey(masterSecret: string, purpose: string): Buffer {
  if (masterSecret.length < 32)
    throw new SecretBoxError('the master secret must be 32 characters or more');
  return Buffer.from(hkdfSync('sha256', Buffer.from(masterSecret, 'utf8'), HKDF_SALT, purpose, 32));
}

const WEBHOOK_SECRET_PURPOSE = 'quire/webhook-secret/v1';

export function sealSecret(masterSecret: string, plaintext: string, context = ''): Buffer {
  const key = deriveKey(masterSecret, WEBHOOK_SECRET_PURPOSE);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), ciphertext]);
}

export function openSecret(masterSecret: string, sealed: Uint8Array, context = ''): string {
  const box = Buffer.from(sealed);
  if (box.length < 1 + IV_BYTES + TAG_BYTES || box[0] !== VERSION) {
    throw new SecretBoxError('sealed secret has an unknown layout');
  }
  const key = deriveKey(masterSecret, WEBHOOK_SECRET_PURPOSE);
  const iv = box.subarray(1, 1 + IV_BYTES);
  const tag = box.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([
      decipher.update(box.subarray(1 + IV_BYTES + TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
  } catch {
    // No detail: the cause is a wrong key, a wrong context or tampering, all the same to callers.
    throw new SecretBoxError('sealed secret does not open with this key');
  }
}
