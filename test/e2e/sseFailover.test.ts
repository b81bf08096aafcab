import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace } from '../../db/workspaces';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { waitUntil } from '../support/wait';
import { commitEvent } from '../support/webhookFixtures';
import { buildWeb, removeWebBuild, startWeb, type WebProcess } from '../support/webServer';

/**
 * S1 across replicas: an `eventsource` client follows the stream of one real `next start`
 * process, that process is SIGKILLed mid-stream while events keep being committed, and the
 * client resumes on a second process with Last-Event-ID: every event arrives once, in order.
 */
const TYPE = 'dev.quire.transcription.task.started';
let db: TestDatabase;
let distDir: string;
const webs: WebProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  distDir = await buildWeb();
}, 900_000);

afterAll(async () => {
  for (const web of webs) await web.stop();
  if (distDir) removeWebBuild(distDir);
  await db?.drop();
});

function follow(url: string, key: string, lastEventId?: string) {
  const ids: number[] = [];
  const kinds: string[] = [];
  const source = new EventSource(url, {
    fetch: (input, init) =>
      fetch(input, {
        ...init,
        headers: {
          ...(init?.headers ?? {}),
          Authorization: `Bearer ${key}`,
          ...(lastEventId ? { 'Last-Event-ID': lastEventId } : {}),
        },
      }),
  });
  let lastId = lastEventId;
  source.addEventListener(TYPE, (event) => {
    ids.push(Number(event.lastEventId));
    lastId = event.lastEventId;
  });
  for (const kind of ['dev.quire.stream.ready', 'dev.quire.stream.checkpoint']) {
    source.addEventListener(kind, (event) => {
      kinds.push(kind);
      if (event.lastEventId) lastId = event.lastEventId;
    });
  }
  return { source, ids, kinds, lastId: () => lastId };
}

/** Waits for a condition, naming it when it does not come. */
async function until(check: () => boolean, timeoutMs: number, what: string) {
  await waitUntil(check, timeoutMs, 25).catch(() => {
    throw new Error(`timed out waiting for ${what}`);
  });
}

describe('event stream across web processes (S1)', () => {
  it('S1 an EventSource client killed off one web process resumes on another with Last-Event-ID: no gap, no duplicate', async () => {
    const a = await createWorkspace(db.pool, 'A');
    const b = await createWorkspace(db.pool, 'B');
    const env = {
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'quire-test-secret-key-0123456789-abcdefghij',
      TEMPORAL_ADDRESS: process.env.QUIRE_TEST_TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
      QUIRE_SSE_HEARTBEAT_MS: '1000',
      QUIRE_SSE_CHECKPOINT_MS: '200',
      QUIRE_SSE_POLL_MS: '500',
      LOG_LEVEL: 'warn',
    };
    const [web1, web2] = await Promise.all([startWeb(distDir, env), startWeb(distDir, env)]);
    webs.push(web1, web2);
    const path = `/api/v1/workspaces/${a.workspace.id}/events`;

    const produced: number[] = [];
    let producing = true;
    // Both workspaces commit all along: B's ids must stay invisible to A's client.
    const producer = (async () => {
      let n = 0;
      while (producing) {
        produced.push(await commitEvent(db.pool, a.workspace.id, { n }, TYPE));
        if (n % 3 === 0) await commitEvent(db.pool, b.workspace.id, { n }, TYPE);
        n += 1;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();

    const first = follow(`${web1.url}${path}?lastEventId=0`, a.apiKey);
    await until(() => first.ids.length >= 30, 30_000, 'events on the first process');
    await web1.stop('SIGKILL');
    first.source.close();
    const resumeFrom = first.lastId();
    expect(resumeFrom).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 300));

    const second = follow(`${web2.url}${path}`, a.apiKey, resumeFrom);
    await until(() => second.ids.length >= 30, 30_000, 'events on the second process');
    producing = false;
    await producer;
    const lastProduced = produced[produced.length - 1]!;
    await until(() => second.ids.includes(lastProduced), 30_000, 'the last event');
    second.source.close();

    const received = [...first.ids, ...second.ids];
    expect(received).toEqual(produced);
    expect(new Set(received).size).toBe(received.length);
    expect(second.ids[0]).toBeGreaterThan(Number(resumeFrom));
    expect(first.kinds[0]).toBe('dev.quire.stream.ready');
    expect(second.kinds[0]).toBe('dev.quire.stream.ready');
    expect(web2.output()).not.toContain(a.apiKey);
  }, 180_000);
});
