import { afterEach, describe, expect, it } from 'vitest';
import { createSubscription } from '../../db/webhooks';
import { createWebhookRelay } from '../../worker/webhookRelay';
import { createTestDatabase } from '../support/db';
import { startHttpsReceiver } from '../support/httpsReceiver';
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
 * P6: the webhook relay is woken by LISTEN/NOTIFY and polls only as a slow backstop, so an
 * idle worker costs PostgreSQL next to nothing; the backstop still finds an event whose
 * notification never came.
 */
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(pollIntervalMs?: number) {
  const db = await createTestDatabase();
  cleanups.push(() => db.drop());
  const receiver = await startHttpsReceiver();
  cleanups.push(() => receiver.close());
  const ws = await createWorkspace(db.pool);
  await createSubscription(db.pool, TEST_SECRET_KEY, {
    workspaceId: ws,
    url: `${receiver.origin}/wake`,
    secret: uniqueSecret('wake'),
  });
  const relay = createWebhookRelay({
    pool: db.pool,
    secretKey: TEST_SECRET_KEY,
    logger: captureLogger(),
    allowHosts: receiver.allowHost,
    ca: receiver.ca,
    schedule: FAST_SCHEDULE,
    pollIntervalMs,
  });
  await relay.start();
  cleanups.push(() => relay.stop({ graceMs: 2_000 }));
  await waitUntil(async () => relay.stats().listening, 5_000);
  return { db, receiver, relay, ws };
}

describe('P6 relays woken by NOTIFY', () => {
  it('P6 an idle listening relay runs no pass for seconds, and a committed event still reaches the receiver at once', async () => {
    const { db, receiver, relay, ws } = await setUp();
    // The start-up pass and the one the LISTEN connection's opening wakes have run.
    await new Promise((resolve) => setTimeout(resolve, 500));
    // A pass is the relay's only use of the pool; before P6 it ran one every second.
    const passes = relay.stats().passes;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(relay.stats().passes).toBe(passes);

    const started = Date.now();
    const eventId = await commitEvent(db.pool, ws);
    await receiver.waitFor(
      (r) => r.some((q) => q.headers['webhook-id'] === String(eventId)),
      5_000,
    );
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('P6 an event whose notification never came is delivered by the fallback poll', async () => {
    const { db, receiver } = await setUp(1_000);
    const ws = await createWorkspace(db.pool);
    await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: `${receiver.origin}/silent`,
      secret: uniqueSecret('silent'),
    });
    // Written past appendEvent, so no wake follows the commit (D10: writers notify after
    // commit, not from a trigger): the relay learns of this event only by polling.
    const { rows } = await db.pool.query<{ id: number }>(
      `INSERT INTO event_outbox (workspace_id, type, subject, data)
       VALUES ($1, 'dev.quire.transcription.completed', 'transcription-jobs/silent', '{}')
       RETURNING id`,
      [ws],
    );
    const eventId = rows[0]!.id;
    await receiver.waitFor(
      (r) => r.some((q) => q.headers['webhook-id'] === String(eventId)),
      5_000,
    );
  });
});
