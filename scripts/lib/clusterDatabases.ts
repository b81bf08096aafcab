import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

/**
 * X7: cluster mode's PostgreSQL roles. Each part of the installation signs in as a role of its
 * own with a password the scripts make once and keep in the cluster's directory (0600): the
 * superuser (the scripts' set-up only), Quire's processes, the Temporal server, Hydra. Each
 * role owns its databases and is the only one besides the superuser that may connect to them.
 */
export const CLUSTER_ROLES = ['postgres', 'quire', 'temporal', 'hydra'] as const;
export type ClusterRole = (typeof CLUSTER_ROLES)[number];
export type ClusterPasswords = Record<ClusterRole, string>;

export const PASSWORDS_FILE = 'postgres-passwords.json';

/** The roles' passwords, made at the first start and read at every later one. */
export function clusterPasswords(dir: string): { file: string; passwords: ClusterPasswords } {
  const file = join(dir, PASSWORDS_FILE);
  const known: Partial<ClusterPasswords> = existsSync(file)
    ? JSON.parse(readFileSync(file, 'utf8'))
    : {};
  const missing = CLUSTER_ROLES.filter((role) => !known[role]);
  if (missing.length > 0) {
    for (const role of missing) known[role] = randomBytes(24).toString('base64url');
    writeFileSync(file, JSON.stringify(known, null, 2), { mode: 0o600 });
  }
  return { file, passwords: known as ClusterPasswords };
}

export function roleUrl(port: number, role: ClusterRole, password: string, database: string) {
  return `postgres://${role}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/**
 * Creates `role` (or sets its password to the kept one) and its databases, owned by it; no
 * other role (PUBLIC) may connect to them. Safe to repeat at every start.
 */
export async function ensureRoleDatabases(
  superuserUrl: string,
  role: Exclude<ClusterRole, 'postgres'>,
  password: string,
  databases: string[],
): Promise<void> {
  const client = new pg.Client({ connectionString: superuserUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
    const secret = client.escapeLiteral(password);
    await client.query(
      exists.rowCount
        ? `ALTER ROLE ${role} WITH LOGIN PASSWORD ${secret}`
        : `CREATE ROLE ${role} WITH LOGIN PASSWORD ${secret}`,
    );
    for (const name of databases) {
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [
        name,
      ]);
      if (!rowCount) await client.query(`CREATE DATABASE ${name} OWNER ${role}`);
      await client.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
    }
  } finally {
    await client.end();
  }
}
