import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool, type Pool } from '../../db/pool';

/**
 * Each test file gets its own database, cloned from the migrated template that the global
 * setup prepared, so tests never see each other's rows.
 */
export const ADMIN_URL =
  process.env.QUIRE_TEST_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEMPLATE_DB_DEFAULT = 'quire_test_template';
const templateDb = () => process.env.QUIRE_TEST_TEMPLATE_DB ?? TEMPLATE_DB_DEFAULT;

/** One statement on the admin connection (CREATE or DROP DATABASE of a test's own). */
export async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface TestDatabase {
  name: string;
  url: string;
  pool: Pool;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `quire_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${templateDb()}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(name);
  const pool = createPool(url, 10);
  return {
    name,
    url,
    pool,
    async drop() {
      await pool.end();
      const client = new pg.Client({ connectionString: ADMIN_URL });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
