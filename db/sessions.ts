import { createHash, randomBytes } from 'node:crypto';
import type { Role } from '../core/roles';
import type { Queryable } from './pool';

/**
 * R3: console sessions, server-side. The cookie holds a random id (`qs_` and 32 bytes); only
 * its SHA-256 is stored. Every request of every replica reads the row (and the account, key
 * and membership behind it), so a session ended here is ended everywhere at once.
 */

export type SessionSubject =
  | { accountId: number; workspaceId: number | null }
  | { apiKeyId: number; workspaceId: number }
  | { operatorKeyId: number };

export const hashSessionId = (id: string) => createHash('sha256').update(id, 'utf8').digest();

export function isSessionIdShape(value: string | undefined): value is string {
  return typeof value === 'string' && /^qs_[A-Za-z0-9_-]{43}$/.test(value);
}

export async function createSession(
  db: Queryable,
  subject: SessionSubject,
  absoluteSeconds: number,
): Promise<string> {
  const id = `qs_${randomBytes(32).toString('base64url')}`;
  await db.query(
    `INSERT INTO sessions (id_hash, account_id, api_key_id, operator_key_id, workspace_id, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
    [
      hashSessionId(id),
      'accountId' in subject ? subject.accountId : null,
      'apiKeyId' in subject ? subject.apiKeyId : null,
      'operatorKeyId' in subject ? subject.operatorKeyId : null,
      'workspaceId' in subject ? subject.workspaceId : null,
      absoluteSeconds,
    ],
  );
  return id;
}

/** What a live session holds, as every request sees it. */
export type LiveSession =
  | {
      kind: 'account';
      accountId: number;
      name: string;
      email: string;
      operator: boolean;
      /** null: the operator view, or an account that chose no workspace yet. */
      workspaceId: number | null;
      /** The account's role in that workspace now; undefined when it is no longer a member. */
      role: Role | undefined;
    }
  | {
      kind: 'apiKey';
      apiKeyId: number;
      label: string | null;
      scope: 'read' | 'write';
      workspaceId: number;
    }
  | { kind: 'operatorKey'; operatorKeyId: number; label: string | null };

/**
 * The session behind a cookie, if it lives: within its absolute lifetime, used within the idle
 * lifetime, its account enabled or its key not revoked. Using it moves its idle deadline.
 */
export async function touchSession(
  db: Queryable,
  id: string,
  idleSeconds: number,
): Promise<LiveSession | undefined> {
  const { rows } = await db.query(
    `UPDATE sessions s SET last_seen_at = now()
      WHERE s.id_hash = $1 AND s.expires_at > now()
        AND s.last_seen_at > now() - make_interval(secs => $2)
    RETURNING s.account_id, s.api_key_id, s.operator_key_id, s.workspace_id`,
    [hashSessionId(id), idleSeconds],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (row.account_id !== null) {
    const account = await db.query(
      `SELECT a.name, a.email, a.operator, m.role FROM accounts a
         LEFT JOIN workspace_members m ON m.account_id = a.id AND m.workspace_id = $2
        WHERE a.id = $1 AND a.disabled_at IS NULL`,
      [row.account_id, row.workspace_id],
    );
    const a = account.rows[0];
    if (!a) return undefined;
    return {
      kind: 'account',
      accountId: row.account_id,
      name: a.name,
      email: a.email,
      operator: a.operator,
      workspaceId: row.workspace_id,
      role: a.role ?? undefined,
    };
  }
  if (row.api_key_id !== null) {
    const key = await db.query(
      'SELECT label, scope FROM api_keys WHERE id = $1 AND workspace_id = $2 AND revoked_at IS NULL',
      [row.api_key_id, row.workspace_id],
    );
    const k = key.rows[0];
    if (!k) return undefined;
    return {
      kind: 'apiKey',
      apiKeyId: row.api_key_id,
      label: k.label,
      scope: k.scope,
      workspaceId: row.workspace_id,
    };
  }
  const operator = await db.query(
    'SELECT label FROM operator_keys WHERE id = $1 AND revoked_at IS NULL',
    [row.operator_key_id],
  );
  if (!operator.rows[0]) return undefined;
  return { kind: 'operatorKey', operatorKeyId: row.operator_key_id, label: operator.rows[0].label };
}

/** Switches an account's session to another of its workspaces (or to the operator view). */
export async function moveSession(
  db: Queryable,
  id: string,
  workspaceId: number | null,
): Promise<void> {
  await db.query(
    'UPDATE sessions SET workspace_id = $2 WHERE id_hash = $1 AND account_id IS NOT NULL',
    [hashSessionId(id), workspaceId],
  );
}

/** R3: sign-out. */
export async function endSession(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM sessions WHERE id_hash = $1', [hashSessionId(id)]);
}

/**
 * R3: ends every session of an account (in one workspace, or everywhere) or of a key; returns
 * how many ended. Called inside the transaction of the change that takes the power away.
 */
export async function endSessionsOf(
  db: Queryable,
  of: { accountId: number; workspaceId?: number } | { apiKeyId: number },
): Promise<number> {
  if ('apiKeyId' in of) {
    const { rowCount } = await db.query('DELETE FROM sessions WHERE api_key_id = $1', [
      of.apiKeyId,
    ]);
    return rowCount ?? 0;
  }
  const { rowCount } = await db.query(
    `DELETE FROM sessions WHERE account_id = $1 AND ($2::bigint IS NULL OR workspace_id = $2)`,
    [of.accountId, of.workspaceId ?? null],
  );
  return rowCount ?? 0;
}

/** Sessions past their absolute lifetime, removed by the maintenance of sign-in. */
export async function removeExpiredSessions(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM sessions WHERE id_hash IN (
       SELECT id_hash FROM sessions WHERE expires_at < now() LIMIT 1000)`,
  );
  return rowCount ?? 0;
}
