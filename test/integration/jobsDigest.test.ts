import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobsDigest } from '../../db/console';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { seedPage } from '../support/pages';

/**
 * C1: the console's live pages compare the jobs digest they were rendered at with the one the
 * change stream pushes; a change the digest misses leaves a job page saying "running" after the
 * job completed. `updated_at` is `now()`, the start of the writing transaction, so neither its
 * millisecond nor even its order says that something changed.
 */
let db: TestDatabase;
let workspaceId: number;

beforeAll(async () => {
  db = await createTestDatabase();
  const ws = await db.pool.query(`INSERT INTO workspaces (name) VALUES ('digest') RETURNING id`);
  workspaceId = ws.rows[0].id;
});

afterAll(async () => {
  await db.drop();
});

async function job(status: string, updatedAt: Date): Promise<string> {
  const page = await seedPage(db.pool, { workspaceId, itemId: 'item', kind: 'image' });
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO transcription_jobs (id, workspace_id, page_id, workflow_id, status, provider, snapshot, input_revision, updated_at)
     VALUES ($1, $2, $3, $4, $5, 'simulated', '{}', 0, $6)`,
    [id, workspaceId, page.pageId, `wf-${id}`, status, updatedAt],
  );
  return id;
}

describe('C1 the jobs digest of the live console pages', () => {
  it('C1 moves when a job ends in the same millisecond as its last change', async () => {
    const at = new Date('2026-12-08T01:00:00.123Z');
    const id = await job('running', at);
    const before = await jobsDigest(db.pool, workspaceId);
    // The same millisecond, 400 microseconds later.
    await db.pool.query(
      `UPDATE transcription_jobs SET status = 'failed', ended_at = now(), updated_at = $2::timestamptz + interval '400 microseconds' WHERE id = $1`,
      [id, at],
    );
    expect(await jobsDigest(db.pool, workspaceId)).not.toBe(before);
  });

  it('C1 moves when a job ends in a transaction that started before another job last changed', async () => {
    const early = new Date('2026-12-08T02:00:00Z');
    const late = new Date('2026-12-08T02:00:05Z');
    const slow = await job('running', early);
    await job('running', late);
    const before = await jobsDigest(db.pool, workspaceId);
    // The ending's now() is older than the newest updated_at: max(updated_at) stays put.
    await db.pool.query(
      `UPDATE transcription_jobs SET status = 'failed', ended_at = now(), updated_at = $2 WHERE id = $1`,
      [slow, new Date(early.getTime() + 1_000)],
    );
    expect(await jobsDigest(db.pool, workspaceId)).not.toBe(before);
  });

  it('C1 stays put when nothing changed', async () => {
    expect(await jobsDigest(db.pool, workspaceId)).toBe(await jobsDigest(db.pool, workspaceId));
  });
});
