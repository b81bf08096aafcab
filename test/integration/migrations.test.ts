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

  it('D11 0100 to 0102 keep every existing row readable in the history partitions, with its id, its position and its keys, and new rows continue after them', async () => {
    // The schema as it was before D11, with rows in every table that becomes partitioned.
    const before = await mkdtemp(join(tmpdir(), 'quire-mig-'));
    try {
      for (const f of await readdir(MIGRATIONS_DIR)) {
        if (f.endsWith('.sql') && f < '0100')
          await copyFile(join(MIGRATIONS_DIR, f), join(before, f));
      }
      const url = await emptyDatabase();
      await migrate(url, before);
      const old = new pg.Client({ connectionString: url });
      await old.connect();
      let ws: number;
      let events: Array<{ id: number; position: number; created_at: Date }>;
      try {
        ws = (await old.query(`INSERT INTO workspaces (name) VALUES ('w') RETURNING id`)).rows[0]
          .id;
        await old.query(
          `INSERT INTO event_outbox (workspace_id, type, data, created_at)
           SELECT $1, 'dev.quire.test', jsonb_build_object('n', n), now() - make_interval(days => 400 - n)
             FROM generate_series(1, 5) n`,
          [ws],
        );
        await old.query('SELECT quire_sequence_events(100)');
        events = (
          await old.query('SELECT id, position, created_at FROM event_outbox ORDER BY position')
        ).rows;
        await old.query(
          `INSERT INTO webhook_subscriptions (id, workspace_id, url, secret_ciphertext, after_event_id)
           VALUES ('sub', $1, 'https://hooks.example.com/x', '\\x00', 0)`,
          [ws],
        );
        await old.query(
          `INSERT INTO webhook_deliveries (subscription_id, workspace_id, event_id, status)
           SELECT 'sub', $1, id, 'succeeded' FROM event_outbox`,
          [ws],
        );
        await old.query(
          `INSERT INTO webhook_delivery_attempts (delivery_id, status_code, latency_ms)
           SELECT id, 200, 5 FROM webhook_deliveries`,
        );
        await old.query(
          `INSERT INTO provider_calls (workspace_id, provider, operation, unit, outcome, occurred_at)
           VALUES ($1, 'simulated', 'recognize', 'call', 'ok', now() - interval '2 years')`,
          [ws],
        );
      } finally {
        await old.end();
      }

      const applied = await migrate(url);
      expect(applied.slice(0, 3)).toEqual([
        '0100_delivery_event_times.sql',
        '0101_time_partitions.sql',
        '0102_time_partition_keys.sql',
      ]);
      const after = new pg.Client({ connectionString: url });
      await after.connect();
      try {
        const partitioned = await after.query(
          `SELECT relname FROM pg_class WHERE relkind = 'p' AND relname = ANY ($1) ORDER BY relname`,
          [['event_outbox', 'provider_calls', 'webhook_deliveries', 'webhook_delivery_attempts']],
        );
        expect(partitioned.rows.map((r) => r.relname)).toEqual([
          'event_outbox',
          'provider_calls',
          'webhook_deliveries',
          'webhook_delivery_attempts',
        ]);
        // Every old row is where it was, readable through the partitioned table.
        const read = await after.query(
          `SELECT id, position, created_at, tableoid::regclass::text AS part FROM event_outbox ORDER BY position`,
        );
        expect(read.rows.map(({ part, ...r }) => r)).toEqual(events);
        expect(new Set(read.rows.map((r) => r.part))).toEqual(new Set(['event_outbox_history']));
        // Deliveries learnt their event's time and still join to it on the new key.
        const joined = await after.query(
          `SELECT d.tableoid::regclass::text AS part, count(a.*)::int AS attempts
             FROM webhook_deliveries d
             JOIN event_outbox e ON e.id = d.event_id AND e.created_at = d.event_created_at
             JOIN webhook_delivery_attempts a ON a.delivery_id = d.id AND a.event_created_at = d.event_created_at
            GROUP BY 1`,
        );
        expect(joined.rows).toEqual([{ part: 'webhook_deliveries_history', attempts: 5 }]);
        expect(
          (await after.query('SELECT tableoid::regclass::text AS part FROM provider_calls')).rows,
        ).toEqual([{ part: 'provider_calls_history' }]);
        // New rows take ids after the old ones and land in this month's partition.
        const fresh = await after.query(
          `INSERT INTO event_outbox (workspace_id, type, data) VALUES ($1, 'dev.quire.test', '{}')
           RETURNING id, tableoid::regclass::text AS part`,
          [ws],
        );
        expect(Number(fresh.rows[0].id)).toBeGreaterThan(
          Math.max(...events.map((e) => Number(e.id))),
        );
        expect(fresh.rows[0].part).toMatch(/^event_outbox_p\d{4}_\d{2}$/);
        await after.query('SELECT quire_sequence_events(100)');
        const positioned = await after.query('SELECT position FROM event_outbox WHERE id = $1', [
          fresh.rows[0].id,
        ]);
        expect(Number(positioned.rows[0].position)).toBe(Number(events.at(-1)!.position) + 1);
        // The keys hold across partitions: a delivery of an event that is not there is refused.
        await expect(
          after.query(
            `INSERT INTO webhook_deliveries (subscription_id, workspace_id, event_id, event_created_at)
             VALUES ('sub', $1, $2, now())`,
            [ws, events[0]!.id],
          ),
        ).rejects.toThrow(/webhook_deliveries_event_fkey/);
      } finally {
        await after.end();
      }
    } finally {
      await rm(before, { recursive: true, force: true });
    }
  });
});
