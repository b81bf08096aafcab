import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Attempt tokens (A1). The clear token is random, lives only in worker memory while an
 * activity runs, and is stored in Postgres as its SHA-256. What travels through workflow
 * history is the token sealed with AES-256-GCM under a key only workers hold, so history,
 * logs and APIs never carry a usable token.
 */
export function newAttemptToken(): Buffer {
  return randomBytes(32);
}

export function hashToken(token: Buffer): Buffer {
  return createHash('sha256').update(token).digest();
}

function sealingKey(secret: string): Buffer {
  // No key configured is never a usable key (D1): refuse rather than seal with nothing.
  if (secret.length < 32) throw new Error('the secret key must be 32 characters or more');
  return Buffer.from(hkdfSync('sha256', secret, 'quire', 'attempt-token-seal', 32));
}

export function sealToken(token: Buffer, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(secret), iv);
  const sealed = Buffer.concat([cipher.update(token), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
}

/** Opens a sealed token; a forged or damaged one throws. */
export function unsealToken(sealed: string, secret: string): Buffer {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length !== 12 + 16 + 32) throw new Error('malformed attempt token');
  const decipher = createDecipheriv('aes-256-gcm', sealingKey(secret), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]);
}
