import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../blobs';
import { parseConfig } from '../../core/config';
import { auditInvariants } from '../../db/audit';
import { createCollection } from '../../db/collections';
import { savePageEdit } from '../../db/pages';
import { withTransaction } from '../../db/pool';
import { lineProgressByCollection } from '../../db/review';
import { authenticateApiKey, createWorkspace } from '../../db/workspaces';
import { ingestBatch } from '../../ingest/batch';
import { configureWeb } from '../../web/lib/server';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { file, png, uploadRequest } from '../support/uploadFixtures';

/**
 * C2 V5: the verification progress the archive's lists show for a collection counts the
 * lines of every item it holds, its sub-collections' included, and no other workspace's.
 */
let db: TestDatabase;
let blobDir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  blobDir = await mkdtemp(join(tmpdir(), 'quire-verification-'));
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'verification-test-secret-key-0123456789ab',
      QUIRE_BLOB_DIR: blobDir,
    }),
  );
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

describe('verification progress of collections (C2, V5)', () => {
  it('C2 V5 a collection counts verified lines and fully verified pages of its items and its sub-collections items', async () => {
    const { workspace, apiKey } = await createWorkspace(db.pool, 'Progress');
    const other = await createWorkspace(db.pool, 'Elsewhere');
    const ws = workspace.id;
    const principal = (await authenticateApiKey(db.pool, apiKey))!;
    const actor = principal.actor as Parameters<typeof createCollection>[1];
    const deps = { pool: db.pool, blobStore: createLocalBlobStore(blobDir) };
    const upload = async (workspaceId: number, itemId: string) =>
      (
        await ingestBatch(
          deps,
          workspaceId,
          uploadRequest([{ name: 'itemId', value: itemId }, file(png(40, 30), 'p.png')]),
        )
      ).pages[0]!.pageId;
    const writeLines = (workspaceId: number, pageId: number, count: number) =>
      withTransaction(db.pool, (tx) =>
        savePageEdit(tx, {
          workspaceId,
          pageId,
          expectedRevision: 0,
          segments: Array.from({ length: count }, (_, index) => ({
            index,
            target: { kind: 'xywh' as const, box: { x: 2, y: 2 + index * 5, w: 30, h: 4 } },
            text: `line ${index}`,
          })),
          author: { kind: 'apiKey', id: 1 },
          channel: 'api',
        }),
      );
    const fonds = await createCollection(db.pool, actor, ws, { title: 'Fonds' });
    const series = await createCollection(db.pool, actor, ws, {
      title: 'Series',
      parentId: fonds.id,
    });
    const empty = await createCollection(db.pool, actor, ws, { title: 'Empty' });
    const top = await upload(ws, 'in-fonds');
    const nested = await upload(ws, 'in-series');
    const foreign = await upload(other.workspace.id, 'in-fonds');
    await writeLines(ws, top, 2);
    await writeLines(ws, nested, 3);
    await writeLines(other.workspace.id, foreign, 4);
    await db.pool.query(
      `UPDATE items SET collection_id = CASE id WHEN 'in-fonds' THEN $2::bigint ELSE $3::bigint END
        WHERE workspace_id = $1`,
      [ws, fonds.id, series.id],
    );
    const { editPage } = await import('../../web/services/pages');
    for (const [pageId, lines] of [
      [top, [0, 1]],
      [nested, [0]],
    ] as const) {
      const verified = await editPage(principal, {
        pageId,
        expectedRevision: 1,
        edit: { verify: [...lines] },
        channel: 'api',
      });
      expect(verified.state).toBe('committed');
    }
    const progress = await lineProgressByCollection(db.pool, ws, [fonds.id, series.id, empty.id]);
    expect(progress.get(fonds.id)).toEqual({ verified: 3, total: 5, fullyVerifiedPages: 1 });
    expect(progress.get(series.id)).toEqual({ verified: 1, total: 3, fullyVerifiedPages: 0 });
    expect(progress.has(empty.id)).toBe(false);
    // Another workspace's collection ids name nothing here.
    expect((await lineProgressByCollection(db.pool, other.workspace.id, [fonds.id])).size).toBe(0);
  });
});
