import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSecret } from '../../core/secretBox';
import { WebhookValidationError } from '../../core/webhookValidation';
import {
  claimDueDeliveries,
  createSubscription,
  DeliveryStateError,
  deleteSubscription,
  fanOutEvents,
  getSubscription,
  listDeliveries,
  listSubscriptions,
  recordDeliveryAttempt,
  relayCursor,
  replayDelivery,
  WebhookNotFoundError,
} from '../../db/webhooks';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { waitUntil } from '../support/wait';
import {
  commitEvent,
  createWorkspace,
  FAST_SCHEDULE,
  TEST_SECRET_KEY,
  uniqueSecret,
} from '../support/webhookFixtures';

/** W1/W2 repository behaviour against real Postgres (no HTTP here; see webhooksDelivery). */
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const url = (n: number | string = 1) => `https://hooks.example.com/quire/${n}`;

async function deliveriesOf(subscriptionId: string) {
  const { rows } = await db.pool.query<{
    id: number;
    event_id: number;
    workspace_id: number;
    status: string;
  }>(
    'SELECT id, event_id, workspace_id, status FROM webhook_deliveries WHERE subscription_id = $1 ORDER BY id',
    [subscriptionId],
  );
  return rows;
}

describe('W1 subscriptions', () => {
  it('W1 the secret is stored encrypted and never returned by list or get', async () => {
    const ws = await createWorkspace(db.pool);
    const secret = uniqueSecret('w1');
    const created = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: url(),
      secret,
    });
    expect(JSON.stringify(created)).not.toContain(secret);
    const listed = await listSubscriptions(db.pool, ws);
    expect(listed.map((s) => s.id)).toEqual([created.id]);
    expect(JSON.stringify(listed)).not.toContain(secret);
    expect(JSON.stringify(await getSubscription(db.pool, ws, created.id))).not.toContain(secret);
    const { rows } = await db.pool.query<{ secret_ciphertext: Buffer }>(
      'SELECT secret_ciphertext FROM webhook_subscriptions WHERE id = $1',
      [created.id],
    );
    const stored = rows[0]!.secret_ciphertext;
    expect(stored.includes(Buffer.from(secret))).toBe(false);
    expect(openSecret(TEST_SECRET_KEY, stored, created.id)).toBe(secret);
  });

  it('W1 invalid targets and secrets are rejected and nothing is stored', async () => {
    const ws = await createWorkspace(db.pool);
    const bad = [
      { url: 'http://hooks.example.com/x', secret: uniqueSecret() },
      { url: 'https://u:p@hooks.example.com/x', secret: uniqueSecret() },
      { url: 'https://hooks.example.com/x?q=1', secret: uniqueSecret() },
      { url: 'https://hooks.example.com/x#f', secret: uniqueSecret() },
      { url: url(), secret: 'short' },
      { url: url(), secret: ` ${uniqueSecret()}` },
      { url: url(), secret: 'x'.repeat(1025) },
    ];
    for (const input of bad) {
      await expect(
        createSubscription(db.pool, TEST_SECRET_KEY, { workspaceId: ws, ...input }),
      ).rejects.toBeInstanceOf(WebhookValidationError);
    }
    expect(await listSubscriptions(db.pool, ws)).toEqual([]);
  });

  it('W1 at most 100 per workspace, also under concurrent creation', async () => {
    const ws = await createWorkspace(db.pool);
    const other = await createWorkspace(db.pool);
    for (let i = 0; i < 97; i++) {
      await createSubscription(db.pool, TEST_SECRET_KEY, {
        workspaceId: ws,
        url: url(i),
        secret: uniqueSecret(),
      });
    }
    const racing = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        createSubscription(db.pool, TEST_SECRET_KEY, {
          workspaceId: ws,
          url: url(`r${i}`),
          secret: uniqueSecret(),
        }),
      ),
    );
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    for (const r of racing.filter((r) => r.status === 'rejected')) {
      expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'too_many_subscriptions' });
    }
    expect(await listSubscriptions(db.pool, ws)).toHaveLength(100);
    await expect(
      createSubscription(db.pool, TEST_SECRET_KEY, {
        workspaceId: ws,
        url: url('x'),
        secret: uniqueSecret(),
      }),
    ).rejects.toMatchObject({ code: 'too_many_subscriptions' });
    // Another workspace's limit is its own.
    await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: other,
      url: url(),
      secret: uniqueSecret(),
    });
  });

  it('W1 a workspace sees and deletes only its own subscriptions', async () => {
    const a = await createWorkspace(db.pool);
    const b = await createWorkspace(db.pool);
    const subA = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: a,
      url: url(),
      secret: uniqueSecret(),
    });
    expect(await listSubscriptions(db.pool, b)).toEqual([]);
    expect(await getSubscription(db.pool, b, subA.id)).toBeUndefined();
    expect(await deleteSubscription(db.pool, b, subA.id)).toBe(false);
    await expect(listDeliveries(db.pool, b, subA.id)).rejects.toBeInstanceOf(WebhookNotFoundError);
    expect(await getSubscription(db.pool, a, subA.id)).toBeDefined();
  });
});

describe('W2 fan-out, claims and the attempt log', () => {
  it('W2 events of workspace A never reach workspace B subscriptions', async () => {
    const a = await createWorkspace(db.pool);
    const b = await createWorkspace(db.pool);
    const subA = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: a,
      url: url('a'),
      secret: uniqueSecret(),
    });
    const subB = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: b,
      url: url('b'),
      secret: uniqueSecret(),
    });
    const eventsA = [await commitEvent(db.pool, a), await commitEvent(db.pool, a)];
    const eventsB = [await commitEvent(db.pool, b)];
    await commitEvent(db.pool, null, {}, 'dev.quire.provider.paused');
    await fanOutEvents(db.pool);
    expect((await deliveriesOf(subA.id)).map((d) => d.event_id)).toEqual(eventsA);
    expect((await deliveriesOf(subB.id)).map((d) => d.event_id)).toEqual(eventsB);
    expect((await deliveriesOf(subA.id)).every((d) => d.workspace_id === a)).toBe(true);
  });

  it('W2 fan-out is idempotent, advances its cursor, and skips events older than the subscription', async () => {
    const ws = await createWorkspace(db.pool);
    const before = await commitEvent(db.pool, ws);
    const sub = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: url(),
      secret: uniqueSecret(),
    });
    const after = await commitEvent(db.pool, ws);
    const first = await fanOutEvents(db.pool);
    const second = await fanOutEvents(db.pool);
    expect(first.cursor).toBeGreaterThanOrEqual(after);
    expect(second.deliveries).toBe(0);
    expect(await relayCursor(db.pool)).toBe(first.cursor);
    const events = (await deliveriesOf(sub.id)).map((d) => d.event_id);
    expect(events).toEqual([after]);
    expect(events).not.toContain(before);
  });

  it('W2 an event type filter limits what a subscription receives', async () => {
    const ws = await createWorkspace(db.pool);
    const sub = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: url(),
      secret: uniqueSecret(),
      eventTypes: ['dev.quire.annotations.published'],
    });
    await commitEvent(db.pool, ws, {}, 'dev.quire.transcription.completed');
    const published = await commitEvent(db.pool, ws, {}, 'dev.quire.annotations.published');
    await fanOutEvents(db.pool);
    expect((await deliveriesOf(sub.id)).map((d) => d.event_id)).toEqual([published]);
  });

  it('W2 concurrent claimers never get the same delivery (SKIP LOCKED) and a lease hides a claimed one', async () => {
    const ws = await createWorkspace(db.pool);
    await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: url(),
      secret: uniqueSecret(),
    });
    for (let i = 0; i < 40; i++) await commitEvent(db.pool, ws);
    await fanOutEvents(db.pool);
    const claims = await Promise.all(
      Array.from({ length: 5 }, () => claimDueDeliveries(db.pool, { limit: 20, leaseMs: 60_000 })),
    );
    const ids = claims.flat().map((c) => c.deliveryId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeGreaterThanOrEqual(40);
    expect(await claimDueDeliveries(db.pool, { limit: 100, leaseMs: 60_000 })).toEqual([]);
    await db.pool.query('DELETE FROM webhook_deliveries');
  });

  it('W2 deleting a subscription deletes its deliveries (and their attempts) first', async () => {
    const ws = await createWorkspace(db.pool);
    const doomed = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: url(1),
      secret: uniqueSecret(),
    });
    const kept = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: url(2),
      secret: uniqueSecret(),
    });
    await commitEvent(db.pool, ws);
    await commitEvent(db.pool, ws);
    await fanOutEvents(db.pool);
    const [first] = await deliveriesOf(doomed.id);
    await recordDeliveryAttempt(
      db.pool,
      first!.id,
      { ok: false, statusCode: 500, latencyMs: 3, error: 'receiver answered 500' },
      {
        schedule: FAST_SCHEDULE,
      },
    );
    expect(await deliveriesOf(doomed.id)).toHaveLength(2);
    expect(await deleteSubscription(db.pool, ws, doomed.id)).toBe(true);
    expect(await deliveriesOf(doomed.id)).toEqual([]);
    const attempts = await db.pool.query(
      'SELECT 1 FROM webhook_delivery_attempts WHERE delivery_id = $1',
      [first!.id],
    );
    expect(attempts.rowCount).toBe(0);
    expect(await deliveriesOf(kept.id)).toHaveLength(2);
    expect(await deleteSubscription(db.pool, ws, doomed.id)).toBe(false);
  });

  it('W2 410 disables the subscription and fails its pending deliveries', async () => {
    const ws = await createWorkspace(db.pool);
    const sub = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: url(),
      secret: uniqueSecret(),
    });
    await commitEvent(db.pool, ws);
    await commitEvent(db.pool, ws);
    await fanOutEvents(db.pool);
    const [first] = await deliveriesOf(sub.id);
    const recorded = await recordDeliveryAttempt(db.pool, first!.id, {
      ok: false,
      statusCode: 410,
      latencyMs: 2,
    });
    expect(recorded.outcome).toBe('disabled');
    const after = await getSubscription(db.pool, ws, sub.id);
    expect(after?.disabledAt).toBeInstanceOf(Date);
    expect((await deliveriesOf(sub.id)).map((d) => d.status)).toEqual(['failed', 'failed']);
    await commitEvent(db.pool, ws);
    await fanOutEvents(db.pool);
    expect(await deliveriesOf(sub.id)).toHaveLength(2);
    await expect(replayDelivery(db.pool, ws, first!.id)).rejects.toMatchObject({
      code: 'subscription_disabled',
    });
  });

  it('W2 a failing delivery is retried on schedule, goes dead past the window, and an admin can replay it, which wakes the relays', async () => {
    const ws = await createWorkspace(db.pool);
    const other = await createWorkspace(db.pool);
    const sub = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: url(),
      secret: uniqueSecret(),
    });
    const eventId = await commitEvent(db.pool, ws);
    await fanOutEvents(db.pool);
    const [delivery] = await deliveriesOf(sub.id);
    const t0 = new Date();
    const retry = await recordDeliveryAttempt(
      db.pool,
      delivery!.id,
      {
        ok: false,
        statusCode: 503,
        latencyMs: 5,
        retryAfterMs: 1500,
        error: 'receiver answered 503',
      },
      { schedule: FAST_SCHEDULE, now: t0 },
    );
    expect(retry.outcome).toBe('retrying');
    expect(retry.nextAttemptAt!.getTime() - t0.getTime()).toBe(1500);
    await expect(replayDelivery(db.pool, ws, delivery!.id)).rejects.toBeInstanceOf(
      DeliveryStateError,
    );
    const dead = await recordDeliveryAttempt(
      db.pool,
      delivery!.id,
      { ok: false, latencyMs: 15000, error: 'timed out after 15000 ms' },
      { schedule: { ...FAST_SCHEDULE, maxAgeMs: 10 }, now: new Date(t0.getTime() + 60_000) },
    );
    expect(dead.outcome).toBe('dead');
    const [log] = await listDeliveries(db.pool, ws, sub.id);
    expect(log).toMatchObject({ eventId, status: 'dead', attemptCount: 2, nextAttemptAt: null });
    expect(log!.attempts.map((a) => a.statusCode)).toEqual([503, null]);
    expect(log!.attempts[1]!.error).toBe('timed out after 15000 ms');

    await expect(replayDelivery(db.pool, other, delivery!.id)).rejects.toMatchObject({
      code: 'delivery_not_found',
    });
    // The replay wakes the relays once committed (D10: no NOTIFY inside its transaction).
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const wakes: string[] = [];
    listener.on('notification', (n) => wakes.push(n.channel));
    await listener.query('LISTEN quire_webhook_deliveries');
    const replayed = await replayDelivery(db.pool, ws, delivery!.id);
    await waitUntil(() => wakes.length > 0, 5_000, 20).finally(() => listener.end());
    expect(wakes).toContain('quire_webhook_deliveries');
    expect(replayed).toMatchObject({ status: 'pending', attemptCount: 0 });
    expect(replayed.attempts).toHaveLength(2);
    const claimed = await claimDueDeliveries(db.pool, { limit: 10, leaseMs: 60_000 });
    expect(claimed.map((c) => c.deliveryId)).toContain(delivery!.id);
    const ok = await recordDeliveryAttempt(db.pool, delivery!.id, {
      ok: true,
      statusCode: 204,
      latencyMs: 4,
    });
    expect(ok.outcome).toBe('succeeded');
    // A late failure from an expired lease never undoes a success.
    const late = await recordDeliveryAttempt(db.pool, delivery!.id, {
      ok: false,
      statusCode: 500,
      latencyMs: 4,
    });
    expect(late.outcome).toBe('stale');
    const [final] = await listDeliveries(db.pool, ws, sub.id);
    expect(final!.status).toBe('succeeded');
  });
});
