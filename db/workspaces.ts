import { hashApiKey, newApiKey } from '../core/apiKeys';
import { type Pool, type Queryable, withTransaction } from './pool';

export interface Workspace {
  id: number;
  name: string;
  createdAt: Date;
}

/** Creates a workspace and its first API key; the clear key is returned once, never stored. */
export async function createWorkspace(
  pool: Pool,
  name: string,
): Promise<{ workspace: Workspace; apiKey: string }> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      'INSERT INTO workspaces (name) VALUES ($1) RETURNING id, name, created_at',
      [name],
    );
    const workspace = { id: rows[0].id, name: rows[0].name, createdAt: rows[0].created_at };
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

export async function getWorkspace(db: Queryable, id: number): Promise<Workspace | undefined> {
  const { rows } = await db.query('SELECT id, name, created_at FROM workspaces WHERE id = $1', [
    id,
  ]);
  return rows[0]
    ? { id: rows[0].id, name: rows[0].name, createdAt: rows[0].created_at }
    : undefined;
}
