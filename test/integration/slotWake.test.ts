import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_SLOTS_CHANNEL } from '../../db/jobEnds';
import { failJob } from '../../db/jobs';
import { withTransaction } from '../../db/pool';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { seedPage } from '../support/pages';
import { waitUntil } from '../support/wait';

/**
 * D10, M4: a job's ending commit notifies nothing from inside its transaction (a NOTIFY there
 * takes PostgreSQL's one notification lock at commit, so such commits queue one behind
 * another); the slot dispatchers are woken after it, and only when a job waits for a slot.
 */
let db: TestDatabase;
let listener: pg.Client;
const wakes: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (n) => {
    if (n.channel === JOB_SLOTS_CHANNEL) wakes.push(n.payload ?? '');
  });
  await listener.query(`LISTEN ${JOB_SLOTS_CHANNEL}`);
});

afterAll(async () => {
  await listener.end();
  await db.drop();
});

async function workspace(): Promise<number> {
  const { rows } = await db.pool.query(
    `INSERT INTO workspaces (name, active_job_cap) VALUES ('slots', 1) RETURNING id`,
  );
  return rows[0].id;
}

async function job(workspaceId: number, awaitingSlot: boolean): Promise<string> {
  const page = await seedPage(db.pool, { workspaceId, itemId: 'item', kind: 'image' });
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO transcription_jobs (id, workspace_id, page_id, workflow_id, status, provider, snapshot, input_revision, awaiting_slot)
     VALUES ($1, $2, $3, $4, 'pending', 'simulated', '{}', 0, $5)`,
    [id, workspaceId, page.pageId, `wf-${id}`, awaitingSlot],
  );
  return id;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('D10 M4 slot wakes after commit', () => {
  it('D10 no trigger on transcription_jobs notifies inside the writing transaction', async () => {
    const { rows } = await db.pool.query(
      `SELECT t.tgname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE t.tgrelid = 'transcription_jobs'::regclass AND NOT t.tgisinternal
          AND p.prosrc ILIKE '%notify%'`,
    );
    expect(rows).toEqual([]);
  });

  it('M4 a job ending while another waits for its slot wakes the dispatchers once committed', async () => {
    const ws = await workspace();
    const holding = await job(ws, false);
    await job(ws, true);
    wakes.length = 0;
    await withTransaction(db.pool, async (client) => {
      await failJob(client, holding, 'internal', 'test', null);
    });
    await waitUntil(() => wakes.length > 0, 5_000, 20);
    expect(wakes.length).toBeGreaterThanOrEqual(1);
  });

  it('M4 a job ending with no job waiting wakes nobody; a rolled-back end wakes nobody', async () => {
    await db.pool.query(
      `UPDATE transcription_jobs SET status = 'canceled', ended_at = now(), awaiting_slot = false WHERE awaiting_slot`,
    );
    const ws = await workspace();
    const ended = await job(ws, false);
    wakes.length = 0;
    await withTransaction(db.pool, async (client) => {
      await failJob(client, ended, 'internal', 'test', null);
    });
    await settle();
    expect(wakes).toEqual([]);

    const rolledBack = await job(ws, false);
    await job(ws, true);
    wakes.length = 0;
    await expect(
      withTransaction(db.pool, async (client) => {
        await failJob(client, rolledBack, 'internal', 'test', null);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await settle();
    expect(wakes).toEqual([]);
  });
});
