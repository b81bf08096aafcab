import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import pg from 'pg';

/**
 * Makes sure the PostgreSQL server behind `url` answers: when it is the local default and
 * down, start the local cluster (Debian's pg_ctlcluster) and wait for it.
 */
export async function ensurePostgres(
  url: string,
  log: (line: string) => void = console.log,
): Promise<void> {
  if (await answers(url)) return;
  const host = new URL(url).hostname;
  const local = host === '127.0.0.1' || host === 'localhost' || host === '';
  if (!local || !existsSync('/etc/postgresql')) {
    throw new Error(
      `PostgreSQL at ${redactUrl(url)} does not answer; start it or set DATABASE_URL`,
    );
  }
  const [version] = readdirSync('/etc/postgresql');
  if (!version) throw new Error('no PostgreSQL cluster under /etc/postgresql');
  log(`starting the local PostgreSQL ${version} cluster...`);
  spawnSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'], {
    stdio: 'inherit',
  });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (await answers(url)) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`PostgreSQL at ${redactUrl(url)} did not come up within 30 s`);
}

async function answers(url: string): Promise<boolean> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({
    connectionString: admin.toString(),
    connectionTimeoutMillis: 2_000,
  });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

export function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}
