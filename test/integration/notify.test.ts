import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { notifyPause, notifyPauseOnce, pauseNoticeText } from '../../worker/notify';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { closedPortUrl } from '../support/fakeProviderServer';

/** A real receiver on 127.0.0.1 that records what it is sent. */
interface Receiver {
  url: string;
  received: Array<{ headers: http.IncomingHttpHeaders; body: string }>;
  status: number;
  hang: boolean;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    received: [],
    status: 204,
    hang: false,
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      receiver.received.push({
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      if (receiver.hang) return;
      res.writeHead(receiver.status);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/T000/B000/notifysecret123`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

let db: TestDatabase;
let receiver: Receiver;

beforeAll(async () => {
  db = await createTestDatabase();
  receiver = await startReceiver();
});

afterAll(async () => {
  await receiver.close();
  await db.drop();
});

beforeEach(async () => {
  receiver.received = [];
  receiver.status = 204;
  receiver.hang = false;
  await db.pool.query('DELETE FROM provider_state');
});

async function pausedEpisode(provider: string, episode: number) {
  await db.pool.query(
    `INSERT INTO provider_state (provider, status, reason, paused_at, episode) VALUES ($1, 'paused', 'outage', now(), $2)
     ON CONFLICT (provider, workspace_id) DO UPDATE SET episode = EXCLUDED.episode`,
    [provider, episode],
  );
}

describe('Q4 pause notification', () => {
  it('Q4 the notice is fixed text naming only the provider and the reason', async () => {
    const result = await notifyPause({
      url: receiver.url,
      provider: 'openai-chat',
      reason: 'outage',
      episode: 1,
    });
    expect(result).toEqual({ sent: true, status: 204 });
    expect(receiver.received).toHaveLength(1);
    expect(JSON.parse(receiver.received[0]!.body)).toEqual({
      text: 'Quire paused provider openai-chat: outage',
    });
    expect(receiver.received[0]!.headers['content-type']).toBe('application/json');
  });

  it('Q4 a provider name cannot smuggle other text into the notice', () => {
    expect(pauseNoticeText('evil\n@channel <b>x</b>', 'credit')).toBe(
      'Quire paused provider evilchannelbxb: credit',
    );
  });

  it('Q4 sent once per episode, even when many workers race to send it', async () => {
    await pausedEpisode('whisper', 1);
    const args = { url: receiver.url, provider: 'whisper', reason: 'auth' as const, episode: 1 };
    const results = await Promise.all(
      Array.from({ length: 8 }, () => notifyPauseOnce(db.pool, args)),
    );
    expect(results.filter((r) => r.sent)).toHaveLength(1);
    expect(results.filter((r) => !r.sent && r.why === 'already-notified')).toHaveLength(7);
    expect(receiver.received).toHaveLength(1);
    // Same episode again: nothing. The next episode: one more.
    expect(await notifyPauseOnce(db.pool, args)).toEqual({ sent: false, why: 'already-notified' });
    await pausedEpisode('whisper', 2);
    expect((await notifyPauseOnce(db.pool, { ...args, episode: 2 })).sent).toBe(true);
    expect(receiver.received).toHaveLength(2);
  });

  it('Q4 with no URL configured nothing is claimed or sent', async () => {
    await pausedEpisode('whisper', 3);
    expect(
      await notifyPauseOnce(db.pool, {
        url: undefined,
        provider: 'whisper',
        reason: 'outage',
        episode: 3,
      }),
    ).toEqual({
      sent: false,
      why: 'no-url',
    });
    const { rows } = await db.pool.query(
      `SELECT notified_episode FROM provider_state WHERE provider = 'whisper'`,
    );
    expect(rows[0].notified_episode).toBe(0);
  });

  it('Q4 never throws: a hanging receiver times out, a refused connection and a 500 are reported', async () => {
    receiver.hang = true;
    const started = Date.now();
    const hung = await notifyPause({
      url: receiver.url,
      provider: 'p',
      reason: 'outage',
      episode: 1,
      timeoutMs: 200,
    });
    expect(hung).toEqual({ sent: false, why: 'timeout' });
    expect(Date.now() - started).toBeLessThan(3_000);
    receiver.hang = false;
    receiver.status = 500;
    expect(
      await notifyPause({ url: receiver.url, provider: 'p', reason: 'outage', episode: 1 }),
    ).toEqual({
      sent: false,
      why: 'http-status',
      status: 500,
    });
    const refused = await notifyPause({
      url: await closedPortUrl(),
      provider: 'p',
      reason: 'outage',
      episode: 1,
    });
    expect(refused).toEqual({ sent: false, why: 'network' });
    const malformed = await notifyPause({
      url: 'not a url',
      provider: 'p',
      reason: 'outage',
      episode: 1,
    });
    expect(malformed.sent).toBe(false);
  });

  it('Q4 a database failure while claiming is reported, not thrown', async () => {
    const broken = {
      query: async () => {
        throw new Error('connection lost');
      },
    } as unknown as Parameters<typeof notifyPauseOnce>[0];
    expect(
      await notifyPauseOnce(broken, {
        url: receiver.url,
        provider: 'p',
        reason: 'outage',
        episode: 1,
      }),
    ).toEqual({
      sent: false,
      why: 'claim-failed',
    });
    expect(receiver.received).toHaveLength(0);
  });

  it('Q4 the result never carries the notify URL (it may hold a token)', async () => {
    receiver.status = 403;
    const result = await notifyPause({
      url: receiver.url,
      provider: 'p',
      reason: 'budget',
      episode: 1,
    });
    expect(JSON.stringify(result)).not.toContain('notifysecret123');
  });
});
