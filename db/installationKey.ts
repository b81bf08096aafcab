import { keyFingerprint, shortFingerprint } from '../core/secretKeys';
import { type Pool, type Queryable, withTransaction } from './pool';

/**
 * D1: one installation, one key. The first process to start records its key's fingerprint;
 * every process after it must seal with that key. A process whose list holds the current key
 * after a newer one rotates the installation to the newer key (the previous one is retired,
 * and never current again). Anything else is refused, with a message naming the variable.
 */
const KEY_CHECK_LOCK = 7_401_119_008;

export type KeyCheck =
  | { ok: true; state: 'recorded' | 'matched' | 'rotated'; fingerprint: string }
  | { ok: false; message: string };

export async function checkInstallationKey(pool: Pool, keys: readonly string[]): Promise<KeyCheck> {
  const fingerprints = keys.map(keyFingerprint);
  const [primary, ...older] = fingerprints;
  if (primary === undefined) return { ok: false, message: 'QUIRE_SECRET_KEY is not set' };
  return withTransaction(pool, async (client) => {
    // Processes starting together (a fleet) check one after the other.
    await client.query('SELECT pg_advisory_xact_lock($1)', [KEY_CHECK_LOCK]);
    const { rows } = await client.query<{ fingerprint: string; state: string }>(
      'SELECT fingerprint, state FROM installation_keys',
    );
    const current = rows.find((r) => r.state === 'current')?.fingerprint;
    const retired = new Set(rows.filter((r) => r.state === 'retired').map((r) => r.fingerprint));
    if (current === undefined && !retired.has(primary)) {
      await client.query(
        `INSERT INTO installation_keys (fingerprint, state) VALUES ($1, 'current')`,
        [primary],
      );
      return { ok: true, state: 'recorded', fingerprint: primary };
    }
    if (current === primary) return { ok: true, state: 'matched', fingerprint: primary };
    if (current !== undefined && older.includes(current) && !retired.has(primary)) {
      await client.query(
        `UPDATE installation_keys SET state = 'retired', retired_at = now() WHERE fingerprint = $1`,
        [current],
      );
      await client.query(
        `INSERT INTO installation_keys (fingerprint, state) VALUES ($1, 'current')`,
        [primary],
      );
      return { ok: true, state: 'rotated', fingerprint: primary };
    }
    const mine = shortFingerprint(primary);
    const theirs = current ? shortFingerprint(current) : 'none';
    return {
      ok: false,
      message: retired.has(primary)
        ? `QUIRE_SECRET_KEY (fingerprint ${mine}) was retired by a key rotation; this installation now seals with the key of fingerprint ${theirs}: put that key first in QUIRE_SECRET_KEYS`
        : `QUIRE_SECRET_KEY (fingerprint ${mine}) is not this installation's key (fingerprint ${theirs}, recorded in PostgreSQL): start every process with the key of the running stack`,
    };
  });
}

/**
 * For health and readiness while a process runs: whether the installation's current key is
 * one this process holds (another process may have rotated it since); null when no process
 * has recorded a key yet. No writes.
 */
export async function installationKeyHeld(
  db: Queryable,
  keys: readonly string[],
): Promise<boolean | null> {
  const { rows } = await db.query<{ fingerprint: string }>(
    `SELECT fingerprint FROM installation_keys WHERE state = 'current'`,
  );
  const current = rows[0]?.fingerprint;
  if (current === undefined) return null;
  return keys.some((key) => keyFingerprint(key) === current);
}
