import type { AccountActor } from '../core/actor';
import { hashApiKey, newApiKey } from '../core/apiKeys';
import type { RecordingRetention } from '../core/media';
import type { KeyScope, Principal } from '../core/roles';
import { type AuditActor, recordAudit } from './auditLog';
import { NotFoundError } from './errors';
import { type Pool, type Queryable, withTransaction } from './pool';
import { endSessionsOf } from './sessions';

export interface Workspace {
  id: number;
  name: string;
  createdAt: Date;
  /** V6: whether the workspace keeps its recordings once the speech engine holds them. */
  recordingRetention: RecordingRetention;
}

/** Creates a workspace and its first API key; the clear key is returned once, never stored. */
export async function createWorkspace(
  pool: Pool,
  name: string,
): Promise<{ workspace: Workspace; apiKey: string }> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      'INSERT INTO workspaces (name) VALUES ($1) RETURNING id, name, created_at, recording_retention',
      [name],
    );
    const workspace = toWorkspace(rows[0]);
    const apiKey = await addApiKey(client, workspace.id, 'initial');
    return { workspace, apiKey };
  });
}

export async function addApiKey(
  db: Queryable,
  workspaceId: number,
  label: string | null,
  options: { scope?: KeyScope; createdBy?: number | null } = {},
): Promise<string> {
  return (await insertApiKey(db, workspaceId, label, options)).key;
}

async function insertApiKey(
  db: Queryable,
  workspaceId: number,
  label: string | null,
  options: { scope?: KeyScope; createdBy?: number | null },
): Promise<{ id: number; key: string; prefix: string }> {
  const { key, hash, prefix } = newApiKey(workspaceId);
  const { rows } = await db.query(
    `INSERT INTO api_keys (workspace_id, key_hash, key_prefix, label, scope, created_by)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [workspaceId, hash, prefix, label, options.scope ?? 'write', options.createdBy ?? null],
  );
  return { id: rows[0].id, key, prefix };
}

export type { Principal };

function keyPrincipal(r: Record<string, unknown>): Principal {
  const id = r.id as number;
  return {
    workspaceId: r.workspace_id as number,
    actor: { kind: 'apiKey', id, name: (r.label as string | null) ?? `key ${r.key_prefix}` },
    grant: { kind: 'key', scope: r.scope as KeyScope },
  };
}

/** The workspace a clear API key belongs to, if the key exists and is not revoked. */
export async function authenticateApiKey(
  db: Queryable,
  key: string,
): Promise<Principal | undefined> {
  const { rows } = await db.query(
    `SELECT id, workspace_id, label, key_prefix, scope FROM api_keys
      WHERE key_hash = $1 AND revoked_at IS NULL`,
    [hashApiKey(key)],
  );
  return rows[0] ? keyPrincipal(rows[0]) : undefined;
}

/** The key's id behind a clear key (tests, the admin CLI). */
export async function apiKeyIdOf(db: Queryable, key: string): Promise<number | undefined> {
  const { rows } = await db.query('SELECT id FROM api_keys WHERE key_hash = $1', [hashApiKey(key)]);
  return rows[0]?.id;
}

export async function activeApiKey(
  db: Queryable,
  apiKeyId: number,
): Promise<Principal | undefined> {
  const { rows } = await db.query(
    `SELECT id, workspace_id, label, key_prefix, scope FROM api_keys
      WHERE id = $1 AND revoked_at IS NULL`,
    [apiKeyId],
  );
  return rows[0] ? keyPrincipal(rows[0]) : undefined;
}

export interface ApiKeyView {
  id: number;
  name: string | null;
  prefix: string;
  scope: KeyScope;
  createdAt: Date;
  createdBy: { id: number; name: string } | null;
  revokedAt: Date | null;
}

export async function listApiKeys(db: Queryable, workspaceId: number): Promise<ApiKeyView[]> {
  const { rows } = await db.query(
    `SELECT k.id, k.label, k.key_prefix, k.scope, k.created_at, k.revoked_at,
            k.created_by, a.name AS created_by_name
       FROM api_keys k LEFT JOIN accounts a ON a.id = k.created_by
      WHERE k.workspace_id = $1 ORDER BY k.id`,
    [workspaceId],
  );
  return rows.map((r) => ({
    id: r.id,
    name: r.label,
    prefix: r.key_prefix,
    scope: r.scope,
    createdAt: r.created_at,
    createdBy: r.created_by === null ? null : { id: r.created_by, name: r.created_by_name },
    revokedAt: r.revoked_at,
  }));
}

/** R1, R5: an owner makes a named, scoped key; the clear key is returned once. */
export async function createApiKey(
  pool: Pool,
  actor: AccountActor,
  input: { workspaceId: number; name: string; scope: KeyScope },
): Promise<{ id: number; key: string; prefix: string }> {
  return withTransaction(pool, async (client) => {
    const made = await insertApiKey(client, input.workspaceId, input.name, {
      scope: input.scope,
      createdBy: actor.id,
    });
    await recordAudit(client, actor, {
      action: 'api_key.create',
      target: `api-keys/${made.id}`,
      workspaceId: input.workspaceId,
      before: null,
      after: { id: made.id, name: input.name, scope: input.scope, prefix: made.prefix },
    });
    return made;
  });
}

/** R1, R3: an owner revokes a key; the console sessions entered with it end with it. */
export async function revokeApiKey(
  pool: Pool,
  actor: AccountActor,
  input: { workspaceId: number; apiKeyId: number },
): Promise<void> {
  await withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()),
              revoked_by = coalesce(revoked_by, $3)
        WHERE id = $1 AND workspace_id = $2 RETURNING label, revoked_at`,
      [input.apiKeyId, input.workspaceId, actor.id],
    );
    if (!rows[0]) throw new NotFoundError('api_key_not_found', 'API key not found');
    await endSessionsOf(client, { apiKeyId: input.apiKeyId });
    await recordAudit(client, actor, {
      action: 'api_key.revoke',
      target: `api-keys/${input.apiKeyId}`,
      workspaceId: input.workspaceId,
      before: { name: rows[0].label },
      after: { revokedAt: rows[0].revoked_at },
    });
  });
}

function toWorkspace(r: Record<string, unknown>): Workspace {
  return {
    id: r.id as number,
    name: r.name as string,
    createdAt: r.created_at as Date,
    recordingRetention: r.recording_retention as RecordingRetention,
  };
}

export async function getWorkspace(db: Queryable, id: number): Promise<Workspace | undefined> {
  const { rows } = await db.query(
    'SELECT id, name, created_at, recording_retention FROM workspaces WHERE id = $1',
    [id],
  );
  return rows[0] ? toWorkspace(rows[0]) : undefined;
}

/**
 * V6: the workspace's rule for recordings, with its audit-log row in the same transaction. It
 * applies to recordings handed to an engine from now on; one already released stays released.
 */
export async function setRecordingRetention(
  pool: Pool,
  actor: AuditActor,
  workspaceId: number,
  retention: RecordingRetention,
): Promise<Workspace> {
  return withTransaction(pool, async (client) => {
    const before = await client.query(
      'SELECT recording_retention FROM workspaces WHERE id = $1 FOR UPDATE',
      [workspaceId],
    );
    if (before.rowCount !== 1) throw new Error(`workspace ${workspaceId} not found`);
    const { rows } = await client.query(
      `UPDATE workspaces SET recording_retention = $2 WHERE id = $1
       RETURNING id, name, created_at, recording_retention`,
      [workspaceId, retention],
    );
    await recordAudit(client, actor, {
      action: 'workspace.recording_retention',
      target: `workspaces/${workspaceId}`,
      workspaceId,
      before: { recordingRetention: before.rows[0].recording_retention },
      after: { recordingRetention: retention },
    });
    return toWorkspace(rows[0]);
  });
}
