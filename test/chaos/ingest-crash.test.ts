import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBlobCleanup, sweepOrphans } from '../../activities/maintenance';
import { createLocalBlobStore } from '../../blobs';
import { blobUsage, workspaceUsageBytes } from '../../db/blobs';
import { ingestBatch } from '../../ingest/batch';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { file, png, uploadRequest } from '../support/uploadFixtures';

/**
 * U2: an ingest in a child process is SIGKILLed at each step; once the cleanup runs (its clock
 * two hours on, so every reservation is due) no orphan remains and the quota holds exactly
 * the bytes pages reference.
 */
let db: TestDatabase;
const HOUR = 60 * 60 * 1000;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

interface ChildRun {
  killedAt?: string;
  result?: { batchId: string; pages: Array<{ pageId: number }> };
}

/** Runs the child; kills its whole process group with SIGKILL when it reports the crash point. */
function runChild(env: Record<string, string>): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['tsx', 'test/support/ingestCrashChild.ts'], {
      env: { ...process.env, ...env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let killedAt: string | undefined;
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL');
      reject(new Error(`child timed out: ${err}`));
    }, 60_000);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const crash = /CRASH_POINT (\S+)\n/.exec(out);
      if (crash && !killedAt) {
        killedAt = crash[1];
        process.kill(-child.pid!, 'SIGKILL');
      }
    });
    child.stderr.on('data', (chunk) => {
      err += chunk;
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (killedAt) {
        expect(signal).toBe('SIGKILL');
        return resolve({ killedAt });
      }
      const result = /RESULT (.+)\n/.exec(out);
      if (code === 0 && result) return resolve({ result: JSON.parse(result[1]!) });
      reject(new Error(`child exited ${code} ${signal}: ${err}`));
    });
  });
}

async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

async function referencedBytes(ws: number): Promise<number> {
  const { rows } = await db.pool.query(
    `SELECT coalesce(sum(b.size_bytes), 0)::bigint AS bytes FROM pages p JOIN blobs b ON b.key = p.blob_key
      WHERE p.workspace_id = $1`,
    [ws],
  );
  return rows[0].bytes;
}

const CASES: Array<[string, number]> = [
  ['after_staging', 1],
  ['after_temp_write', 1],
  ['after_rename', 1],
  ['after_staging', 2],
  ['after_temp_write', 2],
  ['after_rename', 2],
  ['before_page_insert', 1],
];

describe('U2 crash injection at each step of an ingest', () => {
  it.each(CASES)(
    'U2 a crash %s (file %i) leaves no orphan once cleanup runs, and quota equals the bytes referenced',
    async (step, occurrence) => {
      const blobDir = await mkdtemp(join(tmpdir(), 'quire-chaos-'));
      try {
        const blobStore = createLocalBlobStore(blobDir);
        const { rows } = await db.pool.query(
          `INSERT INTO workspaces (name) VALUES ('chaos') RETURNING id`,
        );
        const ws = rows[0].id as number;
        // An earlier, committed upload in the same workspace must survive everything below.
        const earlier = await ingestBatch(
          { pool: db.pool, blobStore },
          ws,
          uploadRequest([file(png(9, 9))]),
        );
        const earlierFiles = await filesUnder(blobDir);

        const run = await runChild({
          DATABASE_URL: db.url,
          QUIRE_BLOB_DIR: blobDir,
          QUIRE_WORKSPACE_ID: String(ws),
          QUIRE_INGEST_CRASH_AT: step,
          QUIRE_INGEST_CRASH_OCCURRENCE: String(occurrence),
        });
        expect(run.killedAt).toBe(step);

        // The crash left reserved bytes behind, still counted against the quota.
        const pending = await db.pool.query(
          `SELECT count(*)::int AS n FROM blob_cleanups WHERE workspace_id = $1 AND status = 'staged'`,
          [ws],
        );
        expect(pending.rows[0].n).toBe(step === 'before_page_insert' ? 2 : occurrence);
        expect(await workspaceUsageBytes(db.pool, ws)).toBeGreaterThan(await referencedBytes(ws));
        if (step !== 'after_staging' || occurrence > 1) {
          expect((await filesUnder(blobDir)).length).toBeGreaterThan(earlierFiles.length);
        }

        // Cleanup before the reservations are due removes nothing.
        expect(await runBlobCleanup({ pool: db.pool, blobStore })).toMatchObject({ deleted: 0 });

        const later = new Date(Date.now() + 2 * HOUR);
        const cleaned = await runBlobCleanup({ pool: db.pool, blobStore, now: later });
        expect(cleaned.deleted).toBe(pending.rows[0].n);
        // The staged rows alone found every byte: the orphan sweep has nothing left to do.
        expect(await filesUnder(blobDir)).toEqual(earlierFiles);
        expect(await sweepOrphans({ pool: db.pool, blobStore, now: later })).toMatchObject({
          removedTemporaries: 0,
          scheduledBlobs: 0,
          removedObjects: 0,
        });
        expect(await workspaceUsageBytes(db.pool, ws)).toBe(await referencedBytes(ws));
        expect(await referencedBytes(ws)).toBe(png(9, 9).length);
        const usage = await blobUsage(db.pool, later);
        expect(usage.workspaces.find((w) => w.workspaceId === ws)?.bytes).toBe(png(9, 9).length);
        const leftovers = await db.pool.query(
          `SELECT count(*)::int AS n FROM blob_cleanups WHERE workspace_id = $1 AND status IN ('staged', 'due', 'failing')`,
          [ws],
        );
        expect(leftovers.rows[0].n).toBe(0);
        const pages = await db.pool.query('SELECT id FROM pages WHERE workspace_id = $1', [ws]);
        expect(pages.rows.map((r) => r.id)).toEqual([earlier.pages[0]!.pageId]);
        const liveBlobs = await db.pool.query(
          'SELECT count(*)::int AS n FROM blobs WHERE workspace_id = $1 AND deleted_at IS NULL',
          [ws],
        );
        expect(liveBlobs.rows[0].n).toBe(1);
      } finally {
        await rm(blobDir, { recursive: true, force: true });
      }
    },
  );

  it('U2 the same child without a crash commits both pages and retires its reservations', async () => {
    const blobDir = await mkdtemp(join(tmpdir(), 'quire-chaos-'));
    try {
      const { rows } = await db.pool.query(
        `INSERT INTO workspaces (name) VALUES ('control') RETURNING id`,
      );
      const ws = rows[0].id as number;
      const run = await runChild({
        DATABASE_URL: db.url,
        QUIRE_BLOB_DIR: blobDir,
        QUIRE_WORKSPACE_ID: String(ws),
      });
      expect(run.result?.pages).toHaveLength(2);
      const later = new Date(Date.now() + 2 * HOUR);
      const blobStore = createLocalBlobStore(blobDir);
      expect(await runBlobCleanup({ pool: db.pool, blobStore, now: later })).toEqual({
        deleted: 0,
        referenced: 0,
        retrying: 0,
      });
      expect(await sweepOrphans({ pool: db.pool, blobStore, now: later })).toMatchObject({
        removedTemporaries: 0,
        scheduledBlobs: 0,
        removedObjects: 0,
      });
      expect((await filesUnder(blobDir)).length).toBe(2);
      expect(await workspaceUsageBytes(db.pool, ws)).toBe(await referencedBytes(ws));
    } finally {
      await rm(blobDir, { recursive: true, force: true });
    }
  });
});
