import { randomBytes } from 'node:crypto';
import { hashApiKey } from './apiKeys';

/**
 * M1: operator keys, `qo_<random>`, act on the installation (never on a workspace's data).
 * Hashed like workspace API keys; the prefix (without the secret part) lets people recognise
 * a key in lists.
 */
export function newOperatorKey(): { key: string; hash: Buffer; prefix: string } {
  const secret = randomBytes(24).toString('base64url');
  const key = `qo_${secret}`;
  return { key, hash: hashApiKey(key), prefix: `qo_${secret.slice(0, 4)}` };
}

/** Parses `Authorization: Bearer <operator key>`; undefined when absent or not an operator key. */
export function bearerOperatorKey(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(qo_[A-Za-z0-9_-]{16,64})\s*$/.exec(header);
  return match?.[1];
}

export function isOperatorKeyShape(key: string): boolean {
  return /^qo_[A-Za-z0-9_-]{16,64}$/.test(key);
}
