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

describe('event stream limits across web processes (S1)', () => {
  it('S1 the per-key stream limit holds across two web processes, and the slots of a SIGKILLed process free themselves when their lease runs out', async () => {
    const a = await createWorkspace(db.pool, 'limits');
    const env = {
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: 'quire-test-secret-key-0123456789-abcdefghij',
      TEMPORAL_ADDRESS: process.env.QUIRE_TEST_TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
      QUIRE_SSE_MAX_STREAMS_PER_KEY: '2',
      QUIRE_SSE_LEASE_MS: '2000',
      QUIRE_SSE_HEARTBEAT_MS: '500',
      LOG_LEVEL: 'warn',
    };
    const [web1, web2] = await Promise.all([startWeb(distDir, env), startWeb(distDir, env)]);
    webs.push(web1, web2);
    const path = `/api/v1/workspaces/${a.workspace.id}/events`;
    const open: AbortController[] = [];
    const stream = async (web: WebProcess, headers: Record<string, string> = {}) => {
      const controller = new AbortController();
      open.push(controller);
      const response = await fetch(`${web.url}${path}`, {
        headers: { Authorization: `Bearer ${a.apiKey}`, ...headers },
        signal: controller.signal,
      });
      const code = response.ok
        ? undefined
        : ((await response.json()) as { error: { code: string } }).error.code;
      return { status: response.status, code };
    };
    try {
      expect(await stream(web1)).toEqual({ status: 200, code: undefined });
      expect(await stream(web2)).toEqual({ status: 200, code: undefined });
      // Each process holds one stream of the key; neither may open a third.
      expect(await stream(web1)).toEqual({ status: 429, code: 'too_many_streams' });
      expect(await stream(web2)).toEqual({ status: 429, code: 'too_many_streams' });
      // A Last-Event-ID no event ever had is refused, not followed in silence.
      expect(await stream(web2, { 'Last-Event-ID': '999999999' })).toEqual({
        status: 400,
        code: 'last_event_id_ahead',
      });

      // web1 dies without closing its stream: its slot lasts only until its lease runs out.
      await web1.stop('SIGKILL');
      const killedAt = Date.now();
      let reopened: { status: number; code?: string } = { status: 0 };
      while (reopened.status !== 200 && Date.now() - killedAt < 15_000) {
        reopened = await stream(web2);
        if (reopened.status !== 200) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(reopened.status).toBe(200);
    } finally {
      for (const controller of open) controller.abort();
    }
  }, 180_000);
});
