import { hkdfSync } from 'node:crypto';
import { KEY_MISMATCH } from './failures';

/**
 * D1: the installation's secret keys, newest first. The first seals (attempt tokens, webhook
 * secrets, sessions, page tokens); every key opens, so a rotation never strands what an older
 * key sealed. Pure: the list comes from configuration (core/config.ts), the installation's
 * record of it from PostgreSQL (db/installationKey.ts).
 */

/** The shortest key accepted: 32 characters (e.g. `openssl rand -hex 32` gives 64). */
export const MIN_SECRET_KEY_LENGTH = 32;

export class SecretKeyMismatchError extends Error {
  override name = KEY_MISMATCH;
}

/**
 * Splits a key list: commas or newlines between keys, blanks around them ignored. A key file
 * may hold one key per line; the environment variable separates them with commas.
 */
export function parseKeyList(raw: string): string[] {
  return raw
    .split(/[,\n]/)
    .map((key) => key.trim())
    .filter((key) => key.length > 0);
}

/**
 * What a process proves it holds without revealing it: HKDF-SHA256 of the key under a label
 * of its own (no other purpose derives with it), hex.
 */
export function keyFingerprint(key: string): string {
  return Buffer.from(
    hkdfSync('sha256', Buffer.from(key, 'utf8'), 'quire/key-fingerprint', 'quire/fleet/v1', 32),
  ).toString('hex');
}

/** A fingerprint short enough for a message, long enough to tell keys apart by eye. */
export function shortFingerprint(fingerprint: string): string {
  return fingerprint.slice(0, 12);
}

/**
 * Opens `sealed` with the first key that opens it; `open` throws when a key does not fit.
 * Throws `SecretKeyMismatchError` when none does.
 */
export function openWithAnyKey<T>(keys: readonly string[], open: (key: string) => T): T {
  for (const key of keys) {
    try {
      return open(key);
    } catch {
      // The next key may be the one that sealed it.
    }
  }
  throw new SecretKeyMismatchError(
    'no configured secret key opens this value: QUIRE_SECRET_KEY differs between the processes of this installation',
  );
}
