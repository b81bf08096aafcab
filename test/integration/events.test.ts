import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEvent, highWaterMark, readAllEventsAfter, readEventsAfter } from '../../db/events';
import { withTransaction } from '../../db/pool';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { untilBlockedOnLock } from '../support/wait';
import { commitEvent, createWorkspace } from '../support/webhookFixtures';

/** E1: the transactional outbox against real Postgres. */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('E1 transactional outbox', () => {
  it('E1 an event is written in the caller transaction: a rollback leaves none', async () => {
    const ws = await createWorkspace(db.pool);
    const before = await highWaterMark(db.pool);
    await expect(
      withTransaction(db.pool, async (client) => {
        await appendEvent(client, {
          workspaceId: ws,
          type: 'dev.quire.transcription.failed',
          data: { a: 1 },
        });
        throw new Error('business write failed');
      }),
    ).rejects.toThrow('business write failed');
    expect(await readEventsAfter(db.pool, ws, before, 10)).toEqual([]);
    const id = await commitEvent(db.pool, ws, { a: 2 });
    const [event] = await readEventsAfter(db.pool, ws, before, 10);
    expect(event).toMatchObject({
      id,
      workspaceId: ws,
      type: 'dev.quire.transcription.completed',
      data: { a: 2 },
    });
    expect(event!.createdAt).toBeInstanceOf(Date);
  });

  it('E1 ids become visible in commit order: a writer that inserts later waits for the earlier commit', async () => {
    const ws = await createWorkspace(db.pool);
    let firstId = 0;
    let secondId = 0;
    let releaseFirst!: () => void;
    const firstHolding = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    let firstInserted!: () => void;
    const inserted = new Promise<void>((resolve) => {
      firstInserted = resolve;
    });
    const first = withTransaction(db.pool, async (client) => {
      firstId = await appendEvent(client, {
        workspaceId: ws,
        type: 'dev.quire.transcription.completed',
        data: {},
      });
      firstInserted();
      await firstHolding;
    });
    await inserted;
    let secondDone = false;
    const second = withTransaction(db.pool, async (client) => {
      secondId = await appendEvent(client, {
        workspaceId: ws,
        type: 'dev.quire.transcription.completed',
        data: {},
      });
    }).then(() => {
      secondDone = true;
    });
    // The second reaches the lock the first holds and waits there. Without the advisory lock
    // it would have committed a higher id already, and a reader at that id would later skip
    // the first.
    await untilBlockedOnLock(db.pool);
    expect(secondDone).toBe(false);
    expect(await highWaterMark(db.pool, ws)).toBe(0);
    releaseFirst();
    await Promise.all([first, second]);
    expect(secondId).toBeGreaterThan(firstId);
  });

  it('E1 a reader following id > cursor never skips an event under concurrent writers', async () => {
    const ws = await createWorkspace(db.pool);
    const start = await highWaterMark(db.pool);
    const writers = 6;
    const perWriter = 25;
    let writing = true;
    const seen: number[] = [];
    const reader = (async () => {
      let cursor = start;
      // Follows the outbox while writers run, then drains what is left once they are done.
      for (let draining = false; ; ) {
        const batch = await readAllEventsAfter(db.pool, cursor, 50);
        for (const event of batch) seen.push(event.id);
        if (batch.length > 0) cursor = batch.at(-1)!.id;
        else if (draining) break;
        else if (!writing) draining = true;
        else await sleep(2);
      }
    })();
    const committed: number[] = [];
    await Promise.all(
      Array.from({ length: writers }, async () => {
        for (let i = 0; i < perWriter; i++) {
          const id = await withTransaction(db.pool, async (client) => {
            const id = await appendEvent(client, {
              workspaceId: ws,
              type: 'dev.quire.transcription.completed',
              data: { i },
            });
            // Hold the transaction open after the insert: the window in which a later
            // writer would otherwise commit a higher id first.
            await sleep(Math.random() * 4);
            return id;
          });
          committed.push(id);
        }
      }),
    );
    writing = false;
    await reader;
    expect(seen.sort((a, b) => a - b)).toEqual(committed.sort((a, b) => a - b));
  });

  it('E1 readEventsAfter is scoped by workspace and strictly after the cursor; highWaterMark per workspace', async () => {
    const a = await createWorkspace(db.pool);
    const b = await createWorkspace(db.pool);
    const a1 = await commitEvent(db.pool, a);
    const b1 = await commitEvent(db.pool, b);
    const a2 = await commitEvent(db.pool, a);
    expect((await readEventsAfter(db.pool, a, 0, 100)).map((e) => e.id)).toEqual([a1, a2]);
    expect((await readEventsAfter(db.pool, a, a1, 100)).map((e) => e.id)).toEqual([a2]);
    expect((await readEventsAfter(db.pool, b, 0, 100)).map((e) => e.id)).toEqual([b1]);
    expect((await readEventsAfter(db.pool, a, 0, 1)).map((e) => e.id)).toEqual([a1]);
    expect(await highWaterMark(db.pool, a)).toBe(a2);
    expect(await highWaterMark(db.pool, b)).toBe(b1);
    expect(await highWaterMark(db.pool)).toBeGreaterThanOrEqual(a2);
  });

  it('E1 a commit notifies quire_events with the outbox id', async () => {
    const ws = await createWorkspace(db.pool);
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    try {
      const received: string[] = [];
      listener.on('notification', (n) => {
        if (n.channel === 'quire_events' && n.payload) received.push(n.payload);
      });
      await listener.query('LISTEN quire_events');
      const id = await commitEvent(db.pool, ws);
      const deadline = Date.now() + 5_000;
      while (!received.includes(String(id)) && Date.now() < deadline) await sleep(20);
      expect(received).toContain(String(id));
    } finally {
      await listener.end();
    }
  });
});
