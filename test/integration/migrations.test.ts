import { spawn } from 'node:child_process';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR, migrate } from '../../db/migrate';
import { ADMIN_URL, databaseUrl } from '../support/db';

const created: string[] = [];

async function emptyDatabase(): Promise<string> {
  const name = `quire_mig_${Math.random().toString(16).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  created.push(name);
  return databaseUrl(name);
}

afterEach(async () => {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  for (const name of created.splice(0))
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
});

function migrateInChild(url: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], {
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('migrations', () => {
  it('applies every migration once; a second run is a no-op', async () => {
    const url = await emptyDatabase();
    const first = await migrate(url);
    expect(first.length).toBeGreaterThanOrEqual(1);
    expect(first[0]).toBe('0001_domain.sql');
    expect(await migrate(url)).toEqual([]);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query('SELECT name FROM schema_migrations ORDER BY name');
    await client.end();
    expect(rows.map((r) => r.name)).toEqual(first);
  });

  it('two processes migrating at once: both succeed, each migration applied exactly once', async () => {
    const url = await emptyDatabase();
    const [a, b] = await Promise.all([migrateInChild(url), migrateInChild(url)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query(
      'SELECT name, count(*)::int AS n FROM schema_migrations GROUP BY name',
    );
    const tables = await client.query(
      `SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'transcription_jobs'`,
    );
    await client.end();
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    expect(tables.rows[0].n).toBe(1);
  });

  it('§3 the schema makes illegal states impossible', async () => {
    const url = await emptyDatabase();
    await migrate(url);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const ws = (await client.query(`INSERT INTO workspaces (name) VALUES ('w') RETURNING id`))
        .rows[0].id;
      await client.query(`INSERT INTO items (workspace_id, id) VALUES ($1, 'i')`, [ws]);
      await expect(
        client.query(
          `INSERT INTO pages (workspace_id, item_id, position, kind, canvas_uri, revision, annotation_page)
           VALUES ($1, 'i', 0, 'image', 'c', NULL, '{}')`,
          [ws],
        ),
      ).rejects.toThrow(/null value in column "revision"/);
      const page = (
        await client.query(
          `INSERT INTO pages (workspace_id, item_id, position, kind, canvas_uri, annotation_page)
           VALUES ($1, 'i', 0, 'image', 'c', '{}') RETURNING id`,
          [ws],
        )
      ).rows[0].id;
      const job = (id: string, key: string | null, status = 'pending') =>
        client.query(
          `INSERT INTO transcription_jobs (id, workspace_id, page_id, workflow_id, provider, snapshot, input_revision,
             idempotency_key, status, ended_at)
           VALUES ($1, $2, $3, $1, 'simulated', '{}', 0, $4, $5, CASE WHEN $5 IN ('pending','running') THEN NULL ELSE now() END)`,
          [id, ws, page, key, status],
        );
      await job('j1', 'k1');
      await expect(job('j2', null)).rejects.toThrow(/one_active_per_page/);
      await expect(job('j3', 'k1', 'failed')).rejects.toThrow(/idempotency_key/);
      const attempt = (n: number) =>
        client.query(
          `INSERT INTO transcription_job_attempts (job_id, attempt_number, snapshot, input_revision, owner, token_hash)
           VALUES ('j1', $1, '{}', 0, 'w', decode(repeat('ab', 32), 'hex'))`,
          [n],
        );
      await attempt(1);
      await expect(attempt(2)).rejects.toThrow(/one_running/);
      await expect(
        client.query(
          `UPDATE transcription_job_attempts SET outcome = 'bogus', ended_at = now() WHERE job_id = 'j1'`,
        ),
      ).rejects.toThrow(/check/);
    } finally {
      await client.end();
    }
  });

  it("R5 0022 turns the revisions' old author strings into typed columns, parsed once", async () => {
    // The schema as it was before 0022, with revisions written the way Quire wrote them.
    const before = await mkdtemp(join(tmpdir(), 'quire-mig-'));
    try {
      for (const f of await readdir(MIGRATIONS_DIR)) {
        if (f.endsWith('.sql') && f < '0022')
          await copyFile(join(MIGRATIONS_DIR, f), join(before, f));
      }
      const url = await emptyDatabase();
      await migrate(url, before);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      let page: number;
      try {
        const ws = (await client.query(`INSERT INTO workspaces (name) VALUES ('w') RETURNING id`))
          .rows[0].id;
        await client.query(`INSERT INTO items (workspace_id, id) VALUES ($1, 'i')`, [ws]);
        page = (
          await client.query(
            `INSERT INTO pages (workspace_id, item_id, position, kind, canvas_uri, annotation_page)
             VALUES ($1, 'i', 0, 'image', 'c', '{}') RETURNING id`,
            [ws],
          )
        ).rows[0].id;
        const revisions: Array<[string, string | null, string | null]> = [
          ['initial', null, null],
          ['engine', 'tesseract', null],
          ['human', null, 'console:account:7'],
          ['human', null, 'api-key:3'],
          ['human', null, 'console:api-key:12'],
          ['human', null, 'account:9'],
          ['human', null, 'written by hand'],
        ];
        for (const [i, [source, engine, editedBy]] of revisions.entries()) {
          await client.query(
            `INSERT INTO page_revisions (page_id, revision, annotation_page, source, engine, job_id,
               attempt_number, edited_by)
             VALUES ($1, $2, '{}', $3, $4, $5, $6, $7)`,
            [page, i, source, engine, engine ? 'j1' : null, engine ? 1 : null, editedBy],
          );
        }
      } finally {
        await client.end();
      }
      expect(await migrate(url)).toContain('0022_revision_authors.sql');
      const after = new pg.Client({ connectionString: url });
      await after.connect();
      try {
        const { rows } = await after.query(
          `SELECT author_kind, author_id::int AS author_id, edit_channel
               FROM page_revisions WHERE page_id = $1 ORDER BY revision`,
          [page],
        );
        expect(rows).toEqual([
          { author_kind: null, author_id: null, edit_channel: null },
          { author_kind: 'engine', author_id: null, edit_channel: null },
          { author_kind: 'account', author_id: 7, edit_channel: 'console' },
          { author_kind: 'apiKey', author_id: 3, edit_channel: 'api' },
          { author_kind: 'apiKey', author_id: 12, edit_channel: 'console' },
          { author_kind: 'account', author_id: 9, edit_channel: 'api' },
          { author_kind: null, author_id: null, edit_channel: null },
        ]);
        // No string is left to parse.
        const column = await after.query(
          `SELECT 1 FROM information_schema.columns
              WHERE table_name = 'page_revisions' AND column_name = 'edited_by'`,
        );
        expect(column.rowCount).toBe(0);
      } finally {
        await after.end();
      }
    } finally {
      await rm(before, { recursive: true, force: true });
    }
  });
});
