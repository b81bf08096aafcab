import { hashApiKey } from '../core/apiKeys';
import { newOperatorKey } from '../core/operatorKeys';
import type { AuditActor } from './auditLog';
import { recordAudit } from './auditLog';
import { NotFoundError } from './errors';
import { type Pool, type Queryable, withTransaction } from './pool';

/**
 * M1: an operator of the installation: an operator key (automation), or an account with the
 * operator flag signed in to the operator view (R1: operators are accounts of the installation).
 */
export type OperatorPrincipal = { operatorKeyId: number } | { accountId: number; name: string };

export interface OperatorKeyView {
  id: number;
  prefix: string;
  label: string | null;
  createdAt: Date;
  revokedAt: Date | null;
}

/** Creates an operator key; the clear key is returned once and never stored (M1). */
export async function createOperatorKey(
  pool: Pool,
  actor: AuditActor,
  label: string | null,
): Promise<{ id: number; key: string }> {
  const { key, hash, prefix } = newOperatorKey();
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      'INSERT INTO operator_keys (key_hash, key_prefix, label) VALUES ($1, $2, $3) RETURNING id',
      [hash, prefix, label],
    );
    const id = rows[0].id as number;
    await recordAudit(client, actor, {
      action: 'operator_key.create',
      target: `operator-keys/${id}`,
      workspaceId: null,
      before: null,
      after: { id, prefix, label },
    });
    return { id, key };
  });
}

/** Revokes an operator key; its sessions end at their next request. */
export async function revokeOperatorKey(pool: Pool, actor: AuditActor, id: number): Promise<void> {
  await withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      'UPDATE operator_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING revoked_at',
      [id],
    );
    if (!rows[0]) throw new NotFoundError('operator_key_not_found', `operator key ${id} not found`);
    await recordAudit(client, actor, {
      action: 'operator_key.revoke',
      target: `operator-keys/${id}`,
      workspaceId: null,
      before: null,
      after: { revokedAt: rows[0].revoked_at },
    });
  });
}

export async function listOperatorKeys(db: Queryable): Promise<OperatorKeyView[]> {
  const { rows } = await db.query(
    'SELECT id, key_prefix, label, created_at, revoked_at FROM operator_keys ORDER BY id',
  );
  return rows.map((r) => ({
    id: r.id,
    prefix: r.key_prefix,
    label: r.label,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  }));
}

/** The operator a clear key belongs to, if it exists and is not revoked. */
export async function authenticateOperatorKey(
  db: Queryable,
  key: string,
): Promise<OperatorPrincipal | undefined> {
  const { rows } = await db.query(
    'SELECT id FROM operator_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [hashApiKey(key)],
  );
  return rows[0] ? { operatorKeyId: rows[0].id } : undefined;
}

/** For console sessions: the operator key is still active. */
export async function activeOperatorKey(
  db: Queryable,
  id: number,
): Promise<OperatorPrincipal | undefined> {
  const { rows } = await db.query(
    'SELECT id FROM operator_keys WHERE id = $1 AND revoked_at IS NULL',
    [id],
  );
  return rows[0] ? { operatorKeyId: rows[0].id } : undefined;
}
