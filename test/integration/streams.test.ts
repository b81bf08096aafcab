import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../core/config';
import { withTransaction } from '../../db/pool';
import { acquireStreamLease, countOpenStreams } from '../../db/streamLeases';
import { addApiKey, createWorkspace } from '../../db/workspaces';
import { configureWeb } from '../../web/lib/server';
import { request, SseReader } from '../support/api';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { eventually } from '../support/wait';
import { commitEvent } from '../support/webhookFixtures';

/**
 * S1 stream bounds, through the route handlers in-process against real Postgres: the limits
 * are counted in PostgreSQL, so streams held by another web replica (rows it leased) count
 * here too, and expire with their lease when that replica is gone.
 */
let db: TestDatabase;
let events: typeof import('../../web/app/api/v1/workspaces/[ws]/events/route');
let live: typeof import('../../web/lib/consoleLive');
let closeEventHub: () => Promise<void>;
const opened: Array<{ abort(): void }> = [];
const LEASE_MS = 1_500;

beforeAll(async () => {
  db = await createTestDatabase();
  configureWeb(
    parseConfig({
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'quire-test-secret-key-0123456789-abcdefghij',
      QUIRE_SSE_MAX_STREAMS_PER_KEY: '2',
      QUIRE_SSE_MAX_STREAMS_PER_WORKSPACE: '3',
      QUIRE_CONSOLE_MAX_STREAMS_PER_KEY: '2',
      QUIRE_SSE_LEASE_MS: String(LEASE_MS),
      QUIRE_SSE_HEARTBEAT_MS: '300',
      QUIRE_SSE_CHECKPOINT_MS: '0',
      QUIRE_SSE_POLL_MS: '200',
    }),
  );
  vi.spyOn(console, 'warn').mockImplementation(() => {});
  vi.spyOn(console, 'log').mockImplementation(() => {});
  events = await import('../../web/app/api/v1/workspaces/[ws]/events/route');
  live = await import('../../web/lib/consoleLive');
  ({ closeEventHub } = await import('../../web/lib/eventStream'));
});

afterEach(async () => {
  for (const s of opened.splice(0)) s.abort();
  await eventually(async () => ((await countOpenStreams(db.pool)) === 0 ? true : undefined), 5_000);
});

afterAll(async () => {
  await closeEventHub?.();
  const { pool } = await import('../../web/lib/server');
  await pool().end();
  vi.restoreAllMocks();
  await db?.drop();
});

async function workspace(name: string) {
  const created = await createWorkspace(db.pool, name);
  return { ws: created.workspace.id, key: created.apiKey };
}

async function openStream(who: { ws: number; key: string }, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const response = await events.GET(
    request('GET', `/workspaces/${who.ws}/events`, {
      key: who.key,
      headers,
      signal: controller.signal,
    }),
    { params: Promise.resolve({ ws: String(who.ws) }) },
  );
  const handle = { abort: () => controller.abort() };
  opened.push(handle);
  return { response, reader: response.ok ? SseReader.of(response) : undefined, ...handle };
}

async function principalOf(key: string) {
  const { authenticateApiKey } = await import('../../db/workspaces');
  return (await authenticateApiKey(db.pool, key))!;
}

const errorCode = async (response: Response) => (await response.json()).error.code;

describe('event stream bounds (S1)', () => {
  it('S1 a Last-Event-ID ahead of the newest event is refused (400 last_event_id_ahead), not followed silently; the newest id itself resumes', async () => {
    const A = await workspace('ahead');
    const newest = await commitEvent(db.pool, A.ws, {}, 'dev.quire.transcription.task.started');
    const ahead = await openStream(A, { 'last-event-id': String(newest + 1_000) });
    expect(ahead.response.status).toBe(400);
    expect(await errorCode(ahead.response)).toBe('last_event_id_ahead');
    expect(await countOpenStreams(db.pool, A.ws)).toBe(0);

    const atNewest = await openStream(A, { 'last-event-id': String(newest) });
    expect(atNewest.response.status).toBe(200);
    const ready = await atNewest.reader!.next();
    expect(JSON.parse(ready.data!)).toMatchObject({ resumeAfter: newest });
    const next = await commitEvent(db.pool, A.ws, {}, 'dev.quire.transcription.task.started');
    const frames = await atNewest.reader!.until((f) => Number(f.id) === next);
    expect(
      frames.filter((f) => f.event?.startsWith('dev.quire.transcription')).map((f) => f.id),
    ).toEqual([String(next)]);
  });

  it("S1 stream limits per key hold across web replicas: another replica's streams count, and a killed replica's slots expire with their lease", async () => {
    const A = await workspace('replicas');
    const keyId = (await principalOf(A.key)).actor.id;
    // Another web replica serves one stream of this key, then dies: its lease is never renewed.
    const elsewhere = await acquireStreamLease(db.pool, {
      workspaceId: A.ws,
      principal: `key:${keyId}`,
      holder: 'web-2:4242',
      limits: { perPrincipal: 2, perWorkspace: 3, leaseMs: LEASE_MS },
    });
    expect(elsewhere.acquired).toBe(true);
    const here = await openStream(A);
    expect(here.response.status).toBe(200);
    const refused = await openStream(A);
    expect(refused.response.status).toBe(429);
    expect(refused.response.headers.get('retry-after')).toBe('5');
    expect(await errorCode(refused.response)).toBe('too_many_streams');
    expect(await countOpenStreams(db.pool, A.ws)).toBe(2);

    // The stream served here keeps its slot by renewal; the dead replica's slot runs out.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 300));
    const afterExpiry = await openStream(A);
    expect(afterExpiry.response.status).toBe(200);
    expect(await countOpenStreams(db.pool, A.ws)).toBe(2);
    // The first stream is still open and served.
    const marker = await commitEvent(db.pool, A.ws, {}, 'dev.quire.transcription.task.started');
    await here.reader!.until((f) => Number(f.id) === marker);
  });

  it("S1 a workspace's open streams are capped across its keys (429 too_many_workspace_streams); another workspace is not affected", async () => {
    const A = await workspace('capped');
    const second = await withTransaction(db.pool, (client) => addApiKey(client, A.ws, 'second'));
    const B = await workspace('neighbour');
    const k1 = [await openStream(A), await openStream(A)];
    const k2 = await openStream({ ws: A.ws, key: second });
    for (const s of [...k1, k2]) expect(s.response.status).toBe(200);
    const over = await openStream({ ws: A.ws, key: second });
    expect(over.response.status).toBe(429);
    expect(await errorCode(over.response)).toBe('too_many_workspace_streams');
    expect((await openStream(B)).response.status).toBe(200);

    // Closing a stream gives its slot back at once.
    k1[0]!.abort();
    await eventually(
      async () =>
        (await openStream({ ws: A.ws, key: second })).response.status === 200 ? true : undefined,
      5_000,
    );
  });

  it("S1 the console's live stream is bounded per signed-in principal and counts toward the workspace cap", async () => {
    const A = await workspace('console');
    const principal = await principalOf(A.key);
    const openLive = async () => {
      const controller = new AbortController();
      opened.push({ abort: () => controller.abort() });
      try {
        const response = await live.openConsoleLive({
          principal,
          // A key's own credential: it holds for the whole test (X3).
          credential: { kind: 'apiKey', apiKeyId: principal.actor.id, workspaceId: A.ws },
          topics: live.liveTopics('jobs'),
          signal: controller.signal,
        });
        return { response, abort: () => controller.abort() };
      } catch (error) {
        const { httpErrorOf } = await import('../../web/lib/errors');
        return { error: httpErrorOf(error), abort: () => controller.abort() };
      }
    };
    const first = await openLive();
    const second = await openLive();
    expect([first.response?.status, second.response?.status]).toEqual([200, 200]);
    const third = await openLive();
    expect(third.error).toMatchObject({
      status: 429,
      body: { error: { code: 'too_many_streams' } },
    });
    // Console streams and event streams share the workspace's three slots.
    expect((await openStream(A)).response.status).toBe(200);
    const full = await openStream(A);
    expect(await errorCode(full.response)).toBe('too_many_workspace_streams');
    // A closed console stream frees its slot.
    first.abort();
    await eventually(
      async () => ((await openLive()).response?.status === 200 ? true : undefined),
      5_000,
    );
  });

  it('S1 a stream whose slot lease is lost ends, so the count never undercounts what is open', async () => {
    const A = await workspace('lost');
    const stream = await openStream(A);
    expect(stream.response.status).toBe(200);
    await stream.reader!.next();
    await db.pool.query('DELETE FROM stream_leases WHERE workspace_id = $1', [A.ws]);
    // Heartbeats come every 300 ms while the stream lives; the renewal (every 500 ms) ends it.
    let ended = false;
    const until = Date.now() + 10_000;
    while (!ended && Date.now() < until) {
      ended = await stream.reader!.next(2_000, { comments: true }).then(
        () => false,
        (error: Error) => error.message === 'stream ended',
      );
    }
    expect(ended).toBe(true);
  });
});
