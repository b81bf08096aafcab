import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../core/config';
import { auditInvariants } from '../../db/audit';
import { createWorkspace } from '../../db/workspaces';
import { configureWeb } from '../../web/lib/server';
import { call, type RouteModule } from '../support/api';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { multipartBody, type Part, png, uploadRequest } from '../support/uploadFixtures';

/**
 * F5 through the HTTP API: a batch described at upload (title, collection, language,
 * metadata) and a CSV sheet describing many items in one step, refused whole on a bad row.
 * Jobs are recorded (no workflow service here: the reconciler would start them).
 */
let db: TestDatabase;
let blobDir: string;
let A: { ws: number; key: string };
let batches: RouteModule;

beforeAll(async () => {
  db = await createTestDatabase();
  blobDir = await mkdtemp(join(tmpdir(), 'quire-describe-'));
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'describe-test-secret-key-0123456789abcdef',
      QUIRE_BLOB_DIR: blobDir,
      QUIRE_DEFAULT_PROVIDER: 'auto',
    }),
  );
  const a = await createWorkspace(db.pool, 'Describe');
  A = { ws: a.workspace.id, key: a.apiKey };
  batches = await import('../../web/app/api/v1/workspaces/[ws]/batches/route');
});

afterEach(async () => {
  expect(await auditInvariants(db.pool)).toEqual([]);
});

afterAll(async () => {
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  await db?.drop();
  await rm(blobDir, { recursive: true, force: true });
});

function upload(parts: Part[]) {
  return call(
    batches,
    'POST',
    `/workspaces/${A.ws}/batches`,
    { ws: String(A.ws) },
    {
      key: A.key,
      rawBody: new Uint8Array(multipartBody(parts)),
      contentType: uploadRequest([]).headers.get('content-type')!,
    },
  );
}

const images = (names: string[]): Part[] =>
  names.map((name, i) => ({ name: 'files[]', value: png(40 + i, 20), filename: name }));

async function countRows() {
  const { rows } = await db.pool.query(
    `SELECT (SELECT count(*) FROM items)::int AS items, (SELECT count(*) FROM pages)::int AS pages,
            (SELECT count(*) FROM transcription_jobs)::int AS jobs`,
  );
  return rows[0];
}

describe('F5 describe at upload', () => {
  it('F5 a CSV describes 3 of 4 uploaded items, and a bad date is refused with its row and column', async () => {
    const sheet = [
      'file,dc:title,Creator,date,language,Shelfmark',
      'p1.png,"Letter, first",Kant,1784-12,frk,A 1',
      'p2,Second letter,Kant,1784-12-05,,A 2',
      'p3.png,Third,"Mendelssohn, M.",1784/1785,,',
    ].join('\r\n');
    const files = images(['p1.png', 'p2.png', 'p3.png', 'p4.png']);
    const res = await upload([
      { name: 'mode', value: 'perFile' },
      {
        name: 'descriptiveMetadata',
        value: JSON.stringify([{ label: 'Project', value: 'Aufklärung' }]),
      },
      { name: 'descriptions', value: sheet },
      ...files,
    ]);
    expect(res.status).toBe(201);
    const itemIds = res.json.pages.map((p: { itemId: string }) => p.itemId);
    const { rows } = await db.pool.query(
      'SELECT id, title, language, descriptive_metadata FROM items WHERE id = ANY($1)',
      [itemIds],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    const [i1, i2, i3, i4] = itemIds.map((id: string) => byId.get(id));
    expect(i1.title).toBe('Letter, first');
    expect(i1.language).toBe('frk');
    expect(i1.descriptive_metadata).toEqual([
      { label: 'Project', value: 'Aufklärung' },
      { label: 'Creator', value: 'Kant' },
      { label: 'Date', value: '1784-12' },
      { label: 'Shelfmark', value: 'A 1' },
    ]);
    // Matched by its name without the extension.
    expect(i2.title).toBe('Second letter');
    expect(i3.descriptive_metadata).toContainEqual({ label: 'Creator', value: 'Mendelssohn, M.' });
    // The fourth has no row: its file name and the batch's metadata only.
    expect(i4.title).toBe('p4.png');
    expect(i4.descriptive_metadata).toEqual([{ label: 'Project', value: 'Aufklärung' }]);

    const before = await countRows();
    const bad = await upload([
      { name: 'mode', value: 'perFile' },
      {
        name: 'descriptions',
        value: ['file,title,date', 'q1.png,Fine,1784', 'q2.png,Bad,1784-02-30'].join('\n'),
      },
      ...images(['q1.png', 'q2.png']),
    ]);
    expect(bad.status).toBe(422);
    expect(bad.json.error.code).toBe('invalid_csv');
    expect(bad.json.error.message).toMatch(/row 3, column date/);
    // Nothing of the request is applied, not even its good row.
    expect(await countRows()).toEqual(before);
  });

  it('F5 the batch title, collection and language describe its one item', async () => {
    const { rows } = await db.pool.query(
      "INSERT INTO collections (workspace_id, title) VALUES ($1, 'Box 7') RETURNING id",
      [A.ws],
    );
    const res = await upload([
      { name: 'mode', value: 'single' },
      { name: 'title', value: 'Aufklärung, two pages' },
      { name: 'collectionId', value: String(rows[0].id) },
      { name: 'language', value: 'frk' },
      ...images(['a.png', 'b.png']),
    ]);
    expect(res.status).toBe(201);
    const item = await db.pool.query(
      'SELECT title, language, collection_id FROM items WHERE id = $1',
      [res.json.pages[0].itemId],
    );
    expect(item.rows[0]).toMatchObject({ title: 'Aufklärung, two pages', language: 'frk' });
    expect(Number(item.rows[0].collection_id)).toBe(Number(rows[0].id));
    const jobs = await db.pool.query(
      "SELECT snapshot->>'language' AS language FROM transcription_jobs WHERE page_id = ANY($1)",
      [res.json.pages.map((p: { pageId: number }) => p.pageId)],
    );
    expect(jobs.rows.map((r) => r.language)).toEqual(['frk', 'frk']);
  });
});
