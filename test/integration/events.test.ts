import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appendEvent,
  highWaterMark,
  newestEventId,
  positionOf,
  readAllEventsAfter,
  readEventsAfter,
} from '../../db/events';
import { withTransaction } from '../../db/pool';
import { fanOutEvents } from '../../db/webhooks';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { waitUntil } from '../support/wait';
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

  it('D10 a transaction that commits late with a lower id is not skipped by any reader, and takes no lock another commit waits on', async () => {
    const ws = await createWorkspace(db.pool);
    const relay = `d10-${ws}`;
    // The relay's cursor starts at the present, like a relay that has been running.
    await fanOutEvents(db.pool, { cursorName: relay, batchSize: 10_000 });
    const start = await highWaterMark(db.pool);
    let releaseSlow!: () => void;
    const slowHolding = new Promise<void>((resolve) => {
      releaseSlow = resolve;
    });
    let slowInserted!: (id: number) => void;
    const inserted = new Promise<number>((resolve) => {
      slowInserted = resolve;
    });
    // The slow one draws its id first and holds its transaction open.
    const slow = withTransaction(db.pool, async (client) => {
      slowInserted(await appendEvent(client, { workspaceId: ws, type: 'slow', data: {} }));
      await slowHolding;
    });
    const slowId = await inserted;
    // The fast one draws a higher id and commits while the slow one is still open: it waits
    // on nothing the slow one holds (the old outbox lock made it wait here).
    const fastId = await commitEvent(db.pool, ws, { fast: true });
    expect(fastId).toBeGreaterThan(slowId);

    // Readers in between: each sees the fast event and moves its cursor past it.
    const all = await readAllEventsAfter(db.pool, start, 100);
    expect(all.map((e) => e.id)).toEqual([fastId]);
    const mine = await readEventsAfter(db.pool, ws, start, 100);
    expect(mine.map((e) => e.id)).toEqual([fastId]);
    const fanned = await fanOutEvents(db.pool, { cursorName: relay });
    expect(fanned.events).toBe(1);

    releaseSlow();
    await slow;
    // After the slow commit every reader, resuming from where it stopped, finds the slow
    // event: it is stamped after the fast one, at a higher position.
    const allAfter = await readAllEventsAfter(db.pool, all[0]!.position, 100);
    expect(allAfter.map((e) => e.id)).toEqual([slowId]);
    expect(allAfter[0]!.position).toBeGreaterThan(all[0]!.position);
    const mineAfter = await readEventsAfter(db.pool, ws, mine[0]!.position, 100);
    expect(mineAfter.map((e) => e.id)).toEqual([slowId]);
    const fannedAfter = await fanOutEvents(db.pool, { cursorName: relay });
    expect(fannedAfter.events).toBe(1);
    expect(fannedAfter.cursor).toBe(allAfter[0]!.position);
  });

  it('D10 positions are gap-free and follow commit order; a rolled-back id leaves no gap', async () => {
    const ws = await createWorkspace(db.pool);
    const start = await highWaterMark(db.pool);
    const first = await commitEvent(db.pool, ws);
    await expect(
      withTransaction(db.pool, async (client) => {
        await appendEvent(client, { workspaceId: ws, type: 'rolled.back', data: {} });
        throw new Error('undone');
      }),
    ).rejects.toThrow('undone');
    const second = await commitEvent(db.pool, ws);
    const events = await readAllEventsAfter(db.pool, start, 100);
    expect(events.map((e) => e.id)).toEqual([first, second]);
    expect(events.map((e) => e.position)).toEqual([start + 1, start + 2]);
    expect(await newestEventId(db.pool)).toBe(start + 2);
    expect(await positionOf(db.pool, second)).toBe(start + 2);
  });

  it('D10 a reader following position > cursor never skips an event under concurrent writers', async () => {
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
        if (batch.length > 0) cursor = batch.at(-1)!.position;
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
            // writer commits a higher id first.
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

  it('E1 readEventsAfter is scoped by workspace and strictly after the position; highWaterMark per workspace', async () => {
    const a = await createWorkspace(db.pool);
    const b = await createWorkspace(db.pool);
    const a1 = await commitEvent(db.pool, a);
    const b1 = await commitEvent(db.pool, b);
    const a2 = await commitEvent(db.pool, a);
    const at = async (id: number) => (await positionOf(db.pool, id))!;
    expect((await readEventsAfter(db.pool, a, 0, 100)).map((e) => e.id)).toEqual([a1, a2]);
    expect((await readEventsAfter(db.pool, a, await at(a1), 100)).map((e) => e.id)).toEqual([a2]);
    expect((await readEventsAfter(db.pool, b, 0, 100)).map((e) => e.id)).toEqual([b1]);
    expect((await readEventsAfter(db.pool, a, 0, 1)).map((e) => e.id)).toEqual([a1]);
    expect(await highWaterMark(db.pool, a)).toBe(await at(a2));
    expect(await highWaterMark(db.pool, b)).toBe(await at(b1));
    expect(await highWaterMark(db.pool)).toBeGreaterThanOrEqual(await at(a2));
  });

  it('D10 a commit wakes quire_events after it commits; stamping notifies the new position', async () => {
    const ws = await createWorkspace(db.pool);
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    try {
      const received: string[] = [];
      listener.on('notification', (n) => {
        if (n.channel === 'quire_events') received.push(n.payload ?? '');
      });
      await listener.query('LISTEN quire_events');
      // Nothing inside the writer's transaction notifies: no trigger on the outbox does.
      const { rows } = await db.pool.query(
        `SELECT tgname FROM pg_trigger WHERE tgrelid = 'event_outbox'::regclass AND NOT tgisinternal`,
      );
      expect(rows).toEqual([]);
      await commitEvent(db.pool, ws);
      await waitUntil(() => received.length > 0, 5_000, 20);
      const position = await highWaterMark(db.pool);
      await waitUntil(() => received.includes(String(position)), 5_000, 20);
    } finally {
      await listener.end();
    }
  });
});
