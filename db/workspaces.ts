import { hashApiKey, newApiKey } from '../core/apiKeys';
import type { RecordingRetention } from '../core/media';
import { type AuditActor, recordAudit } from './auditLog';
import { type Pool, type Queryable, withTransaction } from './pool';

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
): Promise<string> {
  const { key, hash, prefix } = newApiKey(workspaceId);
  await db.query(
    'INSERT INTO api_keys (workspace_id, key_hash, key_prefix, label) VALUES ($1, $2, $3, $4)',
    [workspaceId, hash, prefix, label],
  );
  return key;
}

export interface Principal {
  workspaceId: number;
  apiKeyId: number;
}

/** The workspace a clear API key belongs to, if the key exists and is not revoked. */
export async function authenticateApiKey(
  db: Queryable,
  key: string,
): Promise<Principal | undefined> {
  const { rows } = await db.query(
    'SELECT id, workspace_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [hashApiKey(key)],
  );
  return rows[0] ? { workspaceId: rows[0].workspace_id, apiKeyId: rows[0].id } : undefined;
}

export async function activeApiKey(
  db: Queryable,
  apiKeyId: number,
): Promise<Principal | undefined> {
  const { rows } = await db.query(
    'SELECT id, workspace_id FROM api_keys WHERE id = $1 AND revoked_at IS NULL',
    [apiKeyId],
  );
  return rows[0] ? { workspaceId: rows[0].workspace_id, apiKeyId: rows[0].id } : undefined;
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
