import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../core/webhookVerify';
import { createSubscription, listDeliveries } from '../../db/webhooks';
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

/** Dispatch without loss (issue 4 item 4): SIGKILL of the relay, Postgres connections cut. */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface RelayChild {
  child: ChildProcess;
  killGroup(signal: NodeJS.Signals): void;
  output: string[];
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

function spawnRelay(env: Record<string, string>): RelayChild {
  const child = spawn('npx', ['tsx', 'test/support/webhookRelayProcess.ts'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: npx, tsx and the node process running the relay die together.
    detached: true,
  });
  const output: string[] = [];
  const listeners = new Set<() => void>();
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    output.push(...parts);
    for (const listener of listeners) listener();
  });
  child.stderr!.on('data', (chunk: Buffer) => output.push(`stderr: ${chunk.toString('utf8')}`));
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  cleanups.push(() => killGroup('SIGKILL'));
  return {
    child,
    killGroup,
    output,
    waitForLine(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = output.find((l) => pattern.test(l));
          if (found !== undefined) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(`no line matching ${pattern} in ${timeoutMs} ms:\n${output.join('\n')}`),
          );
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
  };
}

describe('W2 dispatch without loss', () => {
  it('W2 a relay process SIGKILLed between commit and send loses nothing', async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const receiver = await startHttpsReceiver();
    cleanups.push(() => receiver.close());
    const caDir = mkdtempSync(join(tmpdir(), 'quire-ca-'));
    const caFile = join(caDir, 'ca.pem');
    writeFileSync(caFile, receiver.ca);
    const ws = await createWorkspace(db.pool);
    const secret = uniqueSecret('crash');
    const sub = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: `${receiver.origin}/crash`,
      secret,
    });
    const env = {
      DATABASE_URL: db.url,
      QUIRE_SECRET_KEY: TEST_SECRET_KEY,
      QUIRE_WEBHOOK_ALLOW_HOSTS: receiver.allowHost,
      RELAY_CA_FILE: caFile,
      RELAY_LEASE_MS: '1500',
    };

    const first = spawnRelay({ ...env, RELAY_HANG_BEFORE_SEND: '1' });
    await first.waitForLine(/^relay ready$/);
    const committed: number[] = [];
    for (let i = 0; i < 6; i++) committed.push(await commitEvent(db.pool, ws, { i }));
    // Fanned out and claimed (both committed), not yet sent: kill -9 now.
    await first.waitForLine(/^claimed \d+$/);
    first.killGroup('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    // The relay itself died, not only its npx wrapper: its LISTEN connection is gone.
    await waitUntil(async () => {
      const { rowCount } = await db.pool.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = 'quire-webhook-relay-listen'`,
        [db.name],
      );
      return rowCount === 0;
    }, 10_000);
    expect(receiver.requests).toHaveLength(0);
    const claimedBeforeKill = first.output.filter((l) => l.startsWith('claimed ')).length;
    expect(claimedBeforeKill).toBeGreaterThan(0);

    const second = spawnRelay(env);
    await second.waitForLine(/^relay ready$/);
    await receiver.waitFor(
      (r) => new Set(r.map((q) => String(q.headers['webhook-id']))).size >= committed.length,
      60_000,
    );
    const seen = receiver.requests.map((r) => verifyWebhook(r.body, r.headers, { secret }).eventId);
    expect([...new Set(seen)].sort()).toEqual(committed.map(String).sort());
    await waitUntil(async () =>
      (await listDeliveries(db.pool, ws, sub.id)).every((d) => d.status === 'succeeded'),
    );
    expect(second.output.join('\n')).not.toContain(secret);
    second.killGroup('SIGTERM');
    await new Promise((resolve) => second.child.once('exit', resolve));
  });

  it('W2 the relay reconnects its LISTEN connection and delivers after every Postgres connection is cut', async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const receiver = await startHttpsReceiver();
    cleanups.push(() => receiver.close());
    const ws = await createWorkspace(db.pool);
    const secret = uniqueSecret('listen');
    await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: `${receiver.origin}/l`,
      secret,
    });
    const logs = captureLogger();
    const relay = createWebhookRelay({
      pool: db.pool,
      secretKey: TEST_SECRET_KEY,
      logger: logs,
      allowHosts: receiver.allowHost,
      ca: receiver.ca,
      schedule: FAST_SCHEDULE,
      // Polling is too slow to matter here: only NOTIFY can deliver within the wait below.
      pollIntervalMs: 60_000,
      listenReconnectMs: 200,
    });
    await relay.start();
    cleanups.push(() => relay.stop());
    const e1 = await commitEvent(db.pool, ws);
    await receiver.waitFor((r) => r.length >= 1, 5_000);

    // What a Postgres restart looks like to the relay: every backend of its database dies.
    const admin = await createTestDatabase();
    cleanups.push(() => admin.drop());
    await admin.pool.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [db.name],
    );
    await waitUntil(
      async () => logs.lines.some((l) => l.message === 'relay lost its LISTEN connection'),
      5_000,
    );
    await waitUntil(async () => relay.stats().listening, 10_000);
    const e2 = await commitEvent(db.pool, ws);
    await receiver.waitFor((r) => r.some((q) => q.headers['webhook-id'] === String(e2)), 5_000);
    expect(receiver.requests.map((q) => q.headers['webhook-id'])).toEqual([String(e1), String(e2)]);
  });

  it('W2 stop() drains sends in flight within the grace period, and cut-off sends are retried later', async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const receiver = await startHttpsReceiver();
    cleanups.push(() => receiver.close());
    const ws = await createWorkspace(db.pool);
    const secret = uniqueSecret('drain');
    const sub = await createSubscription(db.pool, TEST_SECRET_KEY, {
      workspaceId: ws,
      url: `${receiver.origin}/d`,
      secret,
    });
    const make = () =>
      createWebhookRelay({
        pool: db.pool,
        secretKey: TEST_SECRET_KEY,
        logger: captureLogger(),
        allowHosts: receiver.allowHost,
        ca: receiver.ca,
        schedule: FAST_SCHEDULE,
        pollIntervalMs: 100,
      });

    // Drained: the answer comes within the grace period.
    receiver.setHandler(() => ({ status: 204, delayMs: 500 }));
    let relay = make();
    await relay.start();
    const e1 = await commitEvent(db.pool, ws);
    await receiver.waitFor((r) => r.length >= 1);
    await relay.stop({ graceMs: 5_000 });
    let [delivery] = await listDeliveries(db.pool, ws, sub.id);
    expect(delivery).toMatchObject({ eventId: e1, status: 'succeeded' });

    // Cut off: the answer would come after the grace period; the attempt is recorded as failed.
    receiver.setHandler(() => ({ status: 204, delayMs: 3_000 }));
    relay = make();
    await relay.start();
    const e2 = await commitEvent(db.pool, ws);
    await receiver.waitFor((r) => r.length >= 2);
    const stopping = Date.now();
    await relay.stop({ graceMs: 200 });
    expect(Date.now() - stopping).toBeLessThan(2_000);
    [delivery] = await listDeliveries(db.pool, ws, sub.id);
    expect(delivery).toMatchObject({ eventId: e2, status: 'pending' });
    expect(delivery!.attempts[0]!.error).toContain('aborted: relay stopping');

    receiver.setHandler(() => ({ status: 204 }));
    relay = make();
    await relay.start();
    cleanups.push(() => relay.stop());
    await waitUntil(
      async () => (await listDeliveries(db.pool, ws, sub.id))[0]?.status === 'succeeded',
      10_000,
    );
  });
});
