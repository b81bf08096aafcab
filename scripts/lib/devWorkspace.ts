import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createPool } from '../../db/pool';
import { authenticateApiKey, createWorkspace } from '../../db/workspaces';

/**
 * The development workspace a local stack prints at start: the one saved in `file` while its
 * key still opens, else a new one, saved (mode 0600) for the next start.
 */
export async function ensureDevWorkspace(
  databaseUrl: string,
  file: string,
): Promise<{ workspaceId: number; apiKey: string }> {
  const pool = createPool(databaseUrl, 2);
  try {
    if (existsSync(file)) {
      const saved = JSON.parse(readFileSync(file, 'utf8'));
      if (await authenticateApiKey(pool, saved.apiKey)) return saved;
    }
    const created = await createWorkspace(pool, 'Development');
    const workspace = { workspaceId: created.workspace.id, apiKey: created.apiKey };
    writeFileSync(file, JSON.stringify(workspace), { mode: 0o600 });
    return workspace;
  } finally {
    await pool.end();
  }
}
