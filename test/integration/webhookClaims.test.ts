import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RetrySchedule } from '../../core/webhookSchedule';
import { LOST_SEND_ERROR } from '../../db/webhookClaims';
import {
  claimDueDeliveries,
  createSubscription,
  DuplicateWebhookError,
  fanOutEvents,
  listDeliveries,
  recordDeliveryAttempt,
} from '../../db/webhooks';
import { httpErrorOf } from '../../web/lib/errors';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { waitUntil } from '../support/wait';
import {
  commitEvent,
  createWorkspace,
  TEST_SECRET_KEY,
  uniqueSecret,
} from '../support/webhookFixtures';

/** W1/W2 review findings against real Postgres: attempts counted at the claim, one URL once. */
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function deliveryRow(id: number) {
  const { rows } = await db.pool.query(
    'SELECT status, attempt_count, claimed_at, next_attempt_at FROM webhook_deliveries WHERE id = $1',
    [id],
  );
  return rows[0];
}

describe('W2 attempts are counted before the send', () => {
  it('W2 a send that kills its relay every time spends its attempts and goes dead at the end of the schedule, instead of being retried for ever', async () => {
    const ws = await createWorkspace(db.pool);
    const sub = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: 'https://hooks.example.com/poison',
      secret: uniqueSecret(),
    });
    await commitEvent(db.pool, ws);
    await fanOutEvents(db.pool);
    // Retries every 100 ms for 1.5 s after the first attempt, then the delivery is dead.
    const schedule: RetrySchedule = { delaysMs: [0], repeatEveryMs: 100, maxAgeMs: 1_500 };
    const claims: number[] = [];
    const deadline = Date.now() + 20_000;
    // Each claim is a relay that dies during the send: nothing is ever recorded.
    while (Date.now() < deadline) {
      const claimed = await claimDueDeliveries(db.pool, { limit: 5, leaseMs: 50, schedule });
      const mine = claimed.filter((c) => c.subscriptionId === sub.id);
      for (const c of mine) {
        expect(c.attemptNumber).toBe(claims.length + 1);
        claims.push(c.deliveryId);
        expect((await deliveryRow(c.deliveryId)).attempt_count).toBe(claims.length);
      }
      const [view] = await listDeliveries(db.pool, ws, sub.id);
      if (view!.status !== 'pending') break;
      await sleep(60);
    }
    const [view] = await listDeliveries(db.pool, ws, sub.id);
    expect(view).toMatchObject({ status: 'dead', attemptCount: claims.length });
    expect(claims.length).toBeGreaterThanOrEqual(2);
    // The window bounds the sends: at most one per retry interval, plus the first.
    expect(claims.length).toBeLessThanOrEqual(1 + Math.ceil(1_500 / 100));
    // Every lost send is in the visible log, with when it started.
    expect(view!.attempts).toHaveLength(claims.length);
    expect(view!.attempts.every((a) => a.error === LOST_SEND_ERROR && a.statusCode === null)).toBe(
      true,
    );
    expect(view!.lastError).toBe(LOST_SEND_ERROR);
    expect((await deliveryRow(view!.id)).claimed_at).toBeNull();
    // A dead delivery is never claimed again, though by its time it would be due.
    await waitUntil(async () => {
      const { rows } = await db.pool.query(
        'SELECT next_attempt_at <= now() AS due FROM webhook_deliveries WHERE id = $1',
        [view!.id],
      );
      return rows[0].due === true;
    });
    const again = await claimDueDeliveries(db.pool, { limit: 5, leaseMs: 50, schedule });
    expect(again.filter((c) => c.subscriptionId === sub.id)).toEqual([]);
  });

  it('W2 a claim counts one attempt and a recorded result does not count it twice; a late failure after a newer claim only joins the log', async () => {
    const ws = await createWorkspace(db.pool);
    const sub = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: 'https://hooks.example.com/counted',
      secret: uniqueSecret(),
    });
    await commitEvent(db.pool, ws);
    await fanOutEvents(db.pool);
    const schedule: RetrySchedule = { delaysMs: [0, 0], repeatEveryMs: 0, maxAgeMs: 60_000 };
    const [first] = (
      await claimDueDeliveries(db.pool, { limit: 10, leaseMs: 60_000, schedule })
    ).filter((c) => c.subscriptionId === sub.id);
    expect(first).toMatchObject({ attemptCount: 0, attemptNumber: 1 });
    // While the send is in flight the lease hides it.
    expect(
      (await claimDueDeliveries(db.pool, { limit: 10, leaseMs: 60_000, schedule })).filter(
        (c) => c.subscriptionId === sub.id,
      ),
    ).toEqual([]);
    const failed = await recordDeliveryAttempt(
      db.pool,
      first!.deliveryId,
      { ok: false, statusCode: 500, latencyMs: 3, error: 'receiver answered 500' },
      { schedule, attemptNumber: first!.attemptNumber },
    );
    expect(failed.outcome).toBe('retrying');
    expect(await deliveryRow(first!.deliveryId)).toMatchObject({
      attempt_count: 1,
      claimed_at: null,
    });

    // The second claim's relay stalls past its lease; a third claim takes over.
    const [second] = await claimDueDeliveries(db.pool, { limit: 10, leaseMs: 1, schedule });
    expect(second).toMatchObject({ deliveryId: first!.deliveryId, attemptNumber: 2 });
    await sleep(20);
    const [third] = await claimDueDeliveries(db.pool, { limit: 10, leaseMs: 60_000, schedule });
    expect(third).toMatchObject({ deliveryId: first!.deliveryId, attemptNumber: 3 });
    const late = await recordDeliveryAttempt(
      db.pool,
      second!.deliveryId,
      { ok: false, statusCode: 502, latencyMs: 9000, error: 'receiver answered 502' },
      { schedule, attemptNumber: second!.attemptNumber },
    );
    expect(late.outcome).toBe('stale');
    expect(await deliveryRow(first!.deliveryId)).toMatchObject({ attempt_count: 3 });
    expect((await deliveryRow(first!.deliveryId)).claimed_at).not.toBeNull();
    const ok = await recordDeliveryAttempt(
      db.pool,
      third!.deliveryId,
      { ok: true, statusCode: 204, latencyMs: 4 },
      { schedule, attemptNumber: third!.attemptNumber },
    );
    expect(ok.outcome).toBe('succeeded');
    const [view] = await listDeliveries(db.pool, ws, sub.id);
    expect(view).toMatchObject({ status: 'succeeded', attemptCount: 3 });
    // 500, the second claim's loss (found by the third claim), the late 502, then the 204.
    expect(view!.attempts.map((a) => a.statusCode)).toEqual([500, null, 502, 204]);
    expect(view!.attempts[1]!.error).toBe(LOST_SEND_ERROR);
  });
});

describe('W1 one registration per URL', () => {
  it('W1 a workspace cannot register the same URL twice (409 webhook_url_exists, nothing written); another workspace can', async () => {
    const ws = await createWorkspace(db.pool);
    const other = await createWorkspace(db.pool);
    const create = (workspaceId: number, url: string) =>
      createSubscription(db.pool, TEST_SECRET_KEY, { workspaceId, url, secret: uniqueSecret() });
    await create(ws, 'https://hooks.example.com/quire/1');
    // The same URL as the parser writes it: host case, default port.
    for (const same of [
      'https://hooks.example.com/quire/1',
      'https://HOOKS.example.com/quire/1',
      'https://hooks.example.com:443/quire/1',
    ]) {
      const refused = await create(ws, same).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(DuplicateWebhookError);
      expect(httpErrorOf(refused)).toMatchObject({
        status: 409,
        body: { error: { code: 'webhook_url_exists' } },
      });
    }
    const count = async (workspaceId: number) =>
      (
        await db.pool.query('SELECT 1 FROM webhook_subscriptions WHERE workspace_id = $1', [
          workspaceId,
        ])
      ).rowCount;
    expect(await count(ws)).toBe(1);
    // A different path is a different target; another workspace may use the same URL.
    await create(ws, 'https://hooks.example.com/quire/2');
    await create(other, 'https://hooks.example.com/quire/1');
    expect(await count(ws)).toBe(2);
    expect(await count(other)).toBe(1);

    // Racing creations of one new URL: exactly one wins.
    const raced = await Promise.allSettled(
      Array.from({ length: 5 }, () => create(ws, 'https://hooks.example.com/quire/raced')),
    );
    expect(raced.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of raced.filter((x) => x.status === 'rejected'))
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(DuplicateWebhookError);
  });
});
