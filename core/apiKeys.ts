import { createHash, randomBytes } from 'node:crypto';

/**
 * API keys: `qk_<workspace>_<random>`. Only the SHA-256 is stored; the prefix (without the
 * secret part) is kept to let people recognise a key in lists.
 */
export function newApiKey(workspaceId: number): { key: string; hash: Buffer; prefix: string } {
  const secret = randomBytes(24).toString('base64url');
  const key = `qk_${workspaceId}_${secret}`;
  return { key, hash: hashApiKey(key), prefix: `qk_${workspaceId}_${secret.slice(0, 4)}` };
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Parses `Authorization: Bearer <key>`; undefined when absent or malformed. */
export function bearerKey(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(qk_\d+_[A-Za-z0-9_-]{16,64})\s*$/.exec(header);
  return match?.[1];
}
