import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { CLI_ACTOR } from '../../core/actor';
import { hashPassword, verifyPassword } from '../../core/passwords';
import {
  createAccount,
  findAccountByEmail,
  memberRole,
  putMember,
  setAccountPassword,
} from '../../db/accounts';
import { createPool, type Pool } from '../../db/pool';
import { authenticateApiKey, createWorkspace } from '../../db/workspaces';

/** R1: the development owner of the development workspace, and an operator of the installation. */
export const DEV_OWNER_EMAIL = 'owner@quire.localhost';
export const DEV_OPERATOR_EMAIL = 'operator@quire.localhost';

export interface DevWorkspace {
  workspaceId: number;
  apiKey: string;
  owner: { email: string; password: string };
  operator: { email: string; password: string };
}

/**
 * The development workspace a local stack prints at start: the one saved in `file` while its
 * key still opens, else a new one, saved (mode 0600) for the next start. Beside its API key
 * (integrators), its owner's sign-in and an operator's: accounts with generated passwords,
 * made or repaired at every start so the printed passwords always work.
 */
export async function ensureDevWorkspace(databaseUrl: string, file: string): Promise<DevWorkspace> {
  const pool = createPool(databaseUrl, 2);
  try {
    let saved: Partial<DevWorkspace> | undefined;
    if (existsSync(file)) {
      const read = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevWorkspace>;
      if (read.apiKey && (await authenticateApiKey(pool, read.apiKey))) saved = read;
    }
    if (!saved) {
      const created = await createWorkspace(pool, 'Development');
      saved = { workspaceId: created.workspace.id, apiKey: created.apiKey };
    }
    const workspaceId = saved.workspaceId!;
    const owner = await ensureAccount(
      pool,
      DEV_OWNER_EMAIL,
      'Development owner',
      false,
      saved.owner,
    );
    const ownerAccount = (await findAccountByEmail(pool, DEV_OWNER_EMAIL))!;
    if ((await memberRole(pool, workspaceId, ownerAccount.id)) !== 'owner') {
      await putMember(pool, CLI_ACTOR, { workspaceId, accountId: ownerAccount.id, role: 'owner' });
    }
    const operator = await ensureAccount(
      pool,
      DEV_OPERATOR_EMAIL,
      'Development operator',
      true,
      saved.operator,
    );
    const workspace: DevWorkspace = { workspaceId, apiKey: saved.apiKey!, owner, operator };
    writeFileSync(file, JSON.stringify(workspace), { mode: 0o600 });
    return workspace;
  } finally {
    await pool.end();
  }
}

async function ensureAccount(
  pool: Pool,
  email: string,
  name: string,
  operator: boolean,
  saved: { password: string } | undefined,
): Promise<{ email: string; password: string }> {
  const existing = await findAccountByEmail(pool, email);
  if (existing && saved && (await verifyPassword(existing.passwordHash, saved.password))) {
    return { email, password: saved.password };
  }
  const password = randomBytes(12).toString('base64url');
  const passwordHash = await hashPassword(password);
  if (existing) await setAccountPassword(pool, existing.id, passwordHash);
  else await createAccount(pool, CLI_ACTOR, { email, name, passwordHash, operator });
  return { email, password };
}
