import { Webhook } from 'standardwebhooks';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cloudEventBody } from '../../core/cloudevents';
import type { RetrySchedule } from '../../core/webhookSchedule';
import { standardWebhooksKey } from '../../core/webhookSignature';
import { verifyWebhook } from '../../core/webhookVerify';
import { getEvent } from '../../db/events';
import {
  createSubscription,
  getSubscription,
  listDeliveries,
  listSubscriptions,
} from '../../db/webhooks';
import { type LookupAll, resolveTarget, SsrfError } from '../../net/ssrf';
import { createWebhookRelay, type WebhookRelay } from '../../worker/webhookRelay';
import { createTestDatabase, type TestDatabase } from '../support/db';
import {
  generateSelfSignedCertificate,
  type HttpsReceiver,
  type SelfSignedCertificate,
  startHttpsReceiver,
} from '../support/httpsReceiver';
import { waitUntil } from '../support/wait';
import {
  captureLogger,
  commitEvent,
  createWorkspace,
  FAST_SCHEDULE,
  TEST_SECRET_KEY,
  uniqueSecret,
} from '../support/webhookFixtures';

/**
 * W1-W3 end to end: the relay in this process, a real local HTTPS receiver with a self-signed
 * certificate, real Postgres. Each test has its own database so relays never share deliveries.
 */
let certificate: SelfSignedCertificate;
const cleanups: Array<() => Promise<void>> = [];
const logs = captureLogger();
const secretsUsed: string[] = [];
const PAYLOAD_MARKER = 'payload-marker-7f3a-never-logged';

beforeAll(() => {
  certificate = generateSelfSignedCertificate();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Harness {
  db: TestDatabase;
  receiver: HttpsReceiver;
  relay: WebhookRelay;
  ws: number;
  secret: string;
  subscriptionId: string;
}

async function harness(
  options: {
    schedule?: RetrySchedule;
    requestTimeoutMs?: number;
    lookup?: LookupAll;
    allowHosts?: string;
    path?: string;
    pollIntervalMs?: number;
  } = {},
): Promise<Harness> {
  const db = await createTestDatabase();
  cleanups.push(() => db.drop());
  const receiver = await startHttpsReceiver({ certificate });
  cleanups.push(() => receiver.close());
  const ws = await createWorkspace(db.pool);
  const secret = uniqueSecret('delivery');
  secretsUsed.push(secret);
  const sub = await createSubscription(db.pool, TEST_SECRET_KEY, {
    workspaceId: ws,
    url: `${receiver.origin}${options.path ?? '/hooks/quire'}`,
    secret,
  });
  const relay = createWebhookRelay({
    pool: db.pool,
    secretKey: TEST_SECRET_KEY,
    logger: logs,
    allowHosts: options.allowHosts ?? receiver.allowHost,
    ca: certificate.cert,
    schedule: options.schedule ?? FAST_SCHEDULE,
    pollIntervalMs: options.pollIntervalMs ?? 100,
    requestTimeoutMs: options.requestTimeoutMs ?? 5_000,
    leaseMs: 10_000,
    lookup: options.lookup,
  });
  await relay.start();
  cleanups.push(() => relay.stop({ graceMs: 2_000 }));
  return { db, receiver, relay, ws, secret, subscriptionId: sub.id };
}

const ids = (receiver: HttpsReceiver) =>
  receiver.requests.map((r) => String(r.headers['webhook-id']));

/**
 * Waits until the relay has fanned out every committed event and no delivery is left to
 * send: from then on nothing more can reach a receiver, so what it has received is final.
 */
async function untilRelayIdle(db: TestDatabase): Promise<void> {
  await waitUntil(async () => {
    const { rows } = await db.pool.query<{ idle: boolean }>(
      `SELECT coalesce((SELECT max(last_event_id) FROM relay_cursors), 0)
                >= coalesce((SELECT max(position) FROM event_outbox), 0)
              AND NOT EXISTS (SELECT 1 FROM event_outbox WHERE position IS NULL)
              AND NOT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'pending') AS idle`,
    );
    return rows[0]?.idle === true;
  });
}

describe('W2/W3 deliveries over real HTTPS', () => {
  it('W2 W3 deliveries captured from a real HTTPS receiver verify with the helper and with standardwebhooks', async () => {
    const h = await harness();
    const eventId = await commitEvent(h.db.pool, h.ws, { pageId: 9, marker: PAYLOAD_MARKER });
    await h.receiver.waitFor((r) => r.length >= 1);
    const [request] = h.receiver.requests;
    const event = await getEvent(h.db.pool, eventId);
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/hooks/quire');
    expect(request!.headers['content-type']).toBe('application/cloudevents+json');
    expect(request!.body.toString('utf8')).toBe(cloudEventBody(event!));
    expect(request!.headers['webhook-id']).toBe(String(eventId));
    expect(request!.headers['x-quire-signature']).toMatch(/^v1=[0-9a-f]{64}$/);
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(
      Math.abs(Number(request!.headers['x-quire-timestamp']) - Date.now() / 1000),
    ).toBeLessThan(10);

    const verified = verifyWebhook(request!.body, request!.headers, { secret: h.secret });
    expect(verified).toMatchObject({ eventId: String(eventId), verified: ['quire', 'standard'] });
    expect(verified.event).toMatchObject({
      source: `/quire/workspaces/${h.ws}`,
      data: { pageId: 9 },
    });
    const headers = Object.fromEntries(
      Object.entries(request!.headers).map(([k, v]) => [k, String(v)]),
    );
    expect(
      new Webhook(standardWebhooksKey(h.secret)).verify(request!.body.toString('utf8'), headers),
    ).toMatchObject({
      id: String(eventId),
    });
    expect(() =>
      verifyWebhook(request!.body, request!.headers, { secret: `${h.secret}-wrong` }),
    ).toThrow();

    await waitUntil(
      async () =>
        (await listDeliveries(h.db.pool, h.ws, h.subscriptionId))[0]?.status === 'succeeded',
    );
    const [delivery] = await listDeliveries(h.db.pool, h.ws, h.subscriptionId);
    expect(delivery!.attempts).toHaveLength(1);
    expect(delivery!.attempts[0]).toMatchObject({ statusCode: 204, error: null });
  });

  it('W2 a receiver down for a while then up gets every event once retries land, deduplicated by event id', async () => {
    const h = await harness();
    await h.receiver.goDown();
    const committed: number[] = [];
    for (let i = 0; i < 5; i++) committed.push(await commitEvent(h.db.pool, h.ws, { n: i }));
    // Let several attempts fail against the closed port.
    await waitUntil(async () => {
      const deliveries = await listDeliveries(h.db.pool, h.ws, h.subscriptionId);
      return deliveries.length === 5 && deliveries.every((d) => d.attempts.length >= 2);
    });
    const failing = await listDeliveries(h.db.pool, h.ws, h.subscriptionId);
    expect(failing.every((d) => d.status === 'pending' && d.lastError !== null)).toBe(true);
    expect(h.receiver.requests).toHaveLength(0);
    await h.receiver.comeUp();
    await h.receiver.waitFor((r) => new Set(ids({ requests: r } as HttpsReceiver)).size >= 5);
    await waitUntil(async () =>
      (await listDeliveries(h.db.pool, h.ws, h.subscriptionId)).every(
        (d) => d.status === 'succeeded',
      ),
    );
    const seen = new Set<string>();
    for (const request of h.receiver.requests) {
      const { eventId } = verifyWebhook(request.body, request.headers, { secret: h.secret });
      seen.add(eventId);
    }
    expect([...seen].sort()).toEqual(committed.map(String).sort());
  });

  it('W2 every retry re-signs with a fresh timestamp', async () => {
    const h = await harness({
      schedule: { delaysMs: [0, 1100, 1100], repeatEveryMs: 1100, maxAgeMs: 60_000 },
    });
    h.receiver.setHandler((_r, index) => ({ status: index < 2 ? 500 : 204 }));
    await commitEvent(h.db.pool, h.ws);
    await h.receiver.waitFor((r) => r.length >= 3);
    const stamps = h.receiver.requests.map((r) => Number(r.headers['x-quire-timestamp']));
    expect(new Set(stamps).size).toBe(3);
    expect(stamps).toEqual([...stamps].sort());
    const signatures = h.receiver.requests.map((r) => r.headers['x-quire-signature']);
    expect(new Set(signatures).size).toBe(3);
    for (const request of h.receiver.requests) {
      expect(request.headers['webhook-timestamp']).toBe(request.headers['x-quire-timestamp']);
      expect(verifyWebhook(request.body, request.headers, { secret: h.secret }).eventId).toBe(
        String(request.headers['webhook-id']),
      );
    }
  });

  it('W2 429 with Retry-After is honoured', async () => {
    const h = await harness();
    h.receiver.setHandler((_r, index) =>
      index === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 204 },
    );
    await commitEvent(h.db.pool, h.ws);
    await h.receiver.waitFor((r) => r.length >= 2, 10_000);
    const gap = h.receiver.requests[1]!.receivedAt - h.receiver.requests[0]!.receivedAt;
    // The schedule alone would retry after 200 ms.
    expect(gap).toBeGreaterThanOrEqual(1_900);
    await waitUntil(
      async () =>
        (await listDeliveries(h.db.pool, h.ws, h.subscriptionId))[0]?.status === 'succeeded',
    );
    const [delivery] = await listDeliveries(h.db.pool, h.ws, h.subscriptionId);
    expect(delivery!.attempts.map((a) => a.statusCode)).toEqual([429, 204]);
  });

  it('W2 410 disables the subscription and nothing more is sent to it', async () => {
    const h = await harness();
    h.receiver.setHandler(() => ({ status: 410 }));
    await commitEvent(h.db.pool, h.ws);
    await waitUntil(
      async () => (await getSubscription(h.db.pool, h.ws, h.subscriptionId))?.disabledAt != null,
    );
    await commitEvent(h.db.pool, h.ws);
    await untilRelayIdle(h.db);
    expect(h.receiver.requests).toHaveLength(1);
    const deliveries = await listDeliveries(h.db.pool, h.ws, h.subscriptionId);
    expect(deliveries.map((d) => d.status)).toEqual(['failed']);
  });

  it('W1 W2 redirects are not followed, neither to another receiver nor to internal addresses', async () => {
    const h = await harness();
    const elsewhere = await startHttpsReceiver({ certificate });
    cleanups.push(() => elsewhere.close());
    const targets = [
      `${elsewhere.origin}/stolen`,
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/x',
    ];
    h.receiver.setHandler((_r, index) => ({
      status: 302,
      headers: { location: targets[index % 3]! },
    }));
    await commitEvent(h.db.pool, h.ws);
    await h.receiver.waitFor((r) => r.length >= 3);
    await waitUntil(
      async () =>
        (await listDeliveries(h.db.pool, h.ws, h.subscriptionId))[0]!.attempts.length >= 3,
    );
    expect(elsewhere.requests).toHaveLength(0);
    const [delivery] = await listDeliveries(h.db.pool, h.ws, h.subscriptionId);
    expect(delivery!.status).toBe('pending');
    expect(delivery!.attempts[0]).toMatchObject({
      statusCode: 302,
      error: 'redirect not followed (302)',
    });
  });

  it('W1 SSRF: private, loopback and link-local targets are refused at creation check and at send time (DNS rebinding)', async () => {
    for (const target of [
      'https://127.0.0.1/x',
      'https://10.1.2.3/x',
      'https://[::1]/x',
      'https://[::ffff:127.0.0.1]/x',
      'https://169.254.169.254/x',
      'https://localhost/x',
    ]) {
      await expect(resolveTarget(target), target).rejects.toBeInstanceOf(SsrfError);
    }
    // The name looked public when the subscription was made, then rebinds to loopback.
    let answer = '93.184.216.34';
    const lookup: LookupAll = async () => [{ address: answer, family: 4 }];
    const h = await harness({ lookup, allowHosts: '', path: '/rebind' });
    const host = `rebind.test:${h.receiver.port}`;
    await h.db.pool.query('UPDATE webhook_subscriptions SET url = $1 WHERE id = $2', [
      `https://${host}/rebind`,
      h.subscriptionId,
    ]);
    await expect(resolveTarget(`https://${host}/rebind`, { lookup })).resolves.toMatchObject({
      address: answer,
    });
    answer = '127.0.0.1';
    await commitEvent(h.db.pool, h.ws);
    await waitUntil(
      async () =>
        (await listDeliveries(h.db.pool, h.ws, h.subscriptionId))[0]?.attempts.length === 1,
    );
    const [delivery] = await listDeliveries(h.db.pool, h.ws, h.subscriptionId);
    expect(delivery!.attempts[0]).toMatchObject({
      statusCode: null,
      error: 'blocked: target resolves to a loopback address',
    });
    expect(h.receiver.requests).toHaveLength(0);
  });

  it('W2 a receiver slower than the request timeout is a failed, retried attempt', async () => {
    const h = await harness({ requestTimeoutMs: 300 });
    h.receiver.setHandler((_r, index) =>
      index === 0 ? { status: 204, delayMs: 2_000 } : { status: 204 },
    );
    await commitEvent(h.db.pool, h.ws);
    await waitUntil(
      async () =>
        (await listDeliveries(h.db.pool, h.ws, h.subscriptionId))[0]?.status === 'succeeded',
    );
    const [delivery] = await listDeliveries(h.db.pool, h.ws, h.subscriptionId);
    expect(delivery!.attempts[0]!.error).toBe('Error: timed out after 300 ms');
    expect(delivery!.attempts.at(-1)!.statusCode).toBe(204);
  });

  it('W2 events of workspace A never reach workspace B target', async () => {
    const h = await harness();
    const otherReceiver = await startHttpsReceiver({ certificate });
    cleanups.push(() => otherReceiver.close());
    const b = await createWorkspace(h.db.pool);
    const secretB = uniqueSecret('b');
    secretsUsed.push(secretB);
    await createSubscription(h.db.pool, TEST_SECRET_KEY, {
      workspaceId: b,
      url: `${otherReceiver.origin}/b`,
      secret: secretB,
    });
    await h.relay.stop();
    const relay = createWebhookRelay({
      pool: h.db.pool,
      secretKey: TEST_SECRET_KEY,
      logger: logs,
      allowHosts: `${h.receiver.allowHost},${otherReceiver.allowHost}`,
      ca: certificate.cert,
      schedule: FAST_SCHEDULE,
      pollIntervalMs: 100,
    });
    await relay.start();
    cleanups.push(() => relay.stop());
    const eventsA: number[] = [];
    const eventsB: number[] = [];
    for (let i = 0; i < 4; i++) {
      eventsA.push(await commitEvent(h.db.pool, h.ws, { i }));
      eventsB.push(await commitEvent(h.db.pool, b, { i }));
    }
    await h.receiver.waitFor((r) => r.length >= 4);
    await otherReceiver.waitFor((r) => r.length >= 4);
    await untilRelayIdle(h.db);
    expect(ids(h.receiver).sort()).toEqual(eventsA.map(String).sort());
    expect(ids(otherReceiver).sort()).toEqual(eventsB.map(String).sort());
    for (const request of otherReceiver.requests) {
      expect(verifyWebhook(request.body, request.headers, { secret: secretB }).event.source).toBe(
        `/quire/workspaces/${b}`,
      );
      expect(() => verifyWebhook(request.body, request.headers, { secret: h.secret })).toThrow();
    }
  });

  it('§12 W1 secrets never appear in list output or logs; logs carry no payload bodies', async () => {
    const h = await harness();
    h.receiver.setHandler((_r, index) => ({
      status: index === 0 ? 500 : 204,
      body: `echo ${h.secret}`,
    }));
    await commitEvent(h.db.pool, h.ws, { marker: PAYLOAD_MARKER });
    await waitUntil(
      async () =>
        (await listDeliveries(h.db.pool, h.ws, h.subscriptionId))[0]?.status === 'succeeded',
    );
    const listed = JSON.stringify(await listSubscriptions(h.db.pool, h.ws));
    const deliveries = JSON.stringify(await listDeliveries(h.db.pool, h.ws, h.subscriptionId));
    const logText = logs.text();
    expect(logs.lines.length).toBeGreaterThan(5);
    expect(logText).toContain('webhook delivered');
    for (const secret of secretsUsed) {
      expect(listed).not.toContain(secret);
      expect(deliveries).not.toContain(secret);
      expect(logText).not.toContain(secret);
    }
    expect(logText).not.toContain(PAYLOAD_MARKER);
    expect(deliveries).not.toContain(PAYLOAD_MARKER);
    expect(logText).not.toContain(TEST_SECRET_KEY);
    expect(logText).not.toContain('/hooks/quire');
  });
});
