import { randomBytes } from 'node:crypto';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKER_GRPC_COMPRESSION } from '../../core/temporalConnection';
import { auditInvariants } from '../../db/audit';
import { checkInstallationKey, installationKeyHeld } from '../../db/installationKey';
import { listAttempts } from '../../db/jobs';
import { openDeliverySecret, resealWebhookSecrets } from '../../db/webhookSecrets';
import { createSubscription, listDeliveries } from '../../db/webhooks';
import { createQuireClient, createQuireWorker, type QuireWorker } from '../../worker/createWorker';
import { createWebhookRelay } from '../../worker/webhookRelay';
import { createTestDatabase } from '../support/db';
import { seedPage } from '../support/pages';
import {
  createTestQuire,
  eventually,
  silentLogger,
  type TestQuire,
  temporalAddress,
  untilStatus,
} from '../support/quire';
import { waitUntil } from '../support/wait';
import { commitEvent, uniqueSecret } from '../support/webhookFixtures';
import { spawnWorker, type WorkerProcess, waitHealthy } from '../support/workerProcess';

/**
 * D1: one installation, one key. Processes check their key against the fingerprint kept in
 * PostgreSQL at start; keys rotate as a list; and a sealed value that still does not open is
 * a configuration fault that charges no attempt and spends no delivery attempt.
 */
let quire: TestQuire;
let ws: number;
const processes: WorkerProcess[] = [];
const key = () => randomBytes(32).toString('hex');

beforeAll(async () => {
  quire = await createTestQuire();
  ws = await quire.workspace();
});
afterAll(async () => {
  for (const p of processes) p.child.kill('SIGKILL');
  await quire?.close();
});

describe('one fleet configuration (D1)', () => {
  it('D1 a second worker started with another key refuses to start: non-zero exit naming QUIRE_SECRET_KEY; same-key workers start together', async () => {
    const [a, b] = [spawnWorker(quire, 'fleet-a'), spawnWorker(quire, 'fleet-b')];
    processes.push(a, b);
    await Promise.all([waitHealthy(a), waitHealthy(b)]);
    const stranger = spawnWorker(quire, 'fleet-stranger', { QUIRE_SECRET_KEY: key() });
    processes.push(stranger);
    const exit = await stranger.exited;
    expect(exit.code).toBe(78);
    expect(stranger.output()).toMatch(
      /QUIRE_SECRET_KEY \(fingerprint [0-9a-f]{12}\) is not this installation's key/,
    );
    // The refused worker never polled: the fleet still runs on the recorded key.
    expect(await installationKeyHeld(quire.db.pool, [quire.config.QUIRE_SECRET_KEY])).toBe(true);
    // Stopped here, so that no later test finds them polling its task queue: the stranger
    // of the key-fault test below must be alone on it to take the first job.
    for (const worker of [a, b]) worker.child.kill('SIGTERM');
    await Promise.all([a.exited, b.exited]);
  });

  it('D1 a worker with no key and no key file refuses to start instead of using a built-in key', async () => {
    const keyless = spawnWorker(quire, 'fleet-keyless', {
      QUIRE_SECRET_KEY: '',
      QUIRE_SECRET_KEY_FILE: '',
    });
    processes.push(keyless);
    const exit = await keyless.exited;
    // Run from the repository, the worker finds `.data/dev-secret` when `npm start` made one;
    // then its key is not this test installation's and it is refused all the same.
    expect(exit.code).not.toBe(0);
    expect(keyless.output()).toMatch(/QUIRE_SECRET_KEY/);
  });

  it('D1 rotation: a newer key listed before the current one rotates the installation; the retired key alone is refused', async () => {
    const db = await createTestDatabase();
    try {
      const [older, newer, stranger] = [key(), key(), key()];
      expect(await checkInstallationKey(db.pool, [older])).toMatchObject({
        ok: true,
        state: 'recorded',
      });
      // Processes that start together with the same key all pass.
      const together = await Promise.all(
        [1, 2, 3].map(() => checkInstallationKey(db.pool, [older])),
      );
      expect(together.every((c) => c.ok)).toBe(true);
      // Phase 1: the new key is added after the current one: nothing changes.
      expect(await checkInstallationKey(db.pool, [older, newer])).toMatchObject({
        ok: true,
        state: 'matched',
      });
      // Phase 2: the new key first: the installation now seals with it.
      expect(await checkInstallationKey(db.pool, [newer, older])).toMatchObject({
        ok: true,
        state: 'rotated',
      });
      expect(await installationKeyHeld(db.pool, [older])).toBe(false);
      expect(await installationKeyHeld(db.pool, [older, newer])).toBe(true);
      const retired = await checkInstallationKey(db.pool, [older]);
      expect(retired).toMatchObject({ ok: false });
      expect(!retired.ok && retired.message).toMatch(/retired by a key rotation/);
      // A phase-1 list cannot rotate back to the retired key.
      expect((await checkInstallationKey(db.pool, [older, newer])).ok).toBe(false);
      expect(await checkInstallationKey(db.pool, [newer])).toMatchObject({
        ok: true,
        state: 'matched',
      });
      const strange = await checkInstallationKey(db.pool, [stranger]);
      expect(!strange.ok && strange.message).toMatch(/QUIRE_SECRET_KEY/);
      expect(!strange.ok && strange.message).not.toContain(stranger);
    } finally {
      await db.drop();
    }
  });

  it('D1 a worker that does not hold the installation key stops taking work at its first claim or foreign token; no attempt is charged and jobs complete on the right worker', async () => {
    // The fleet's first worker records the key at start (worker/main.ts); this one is built
    // in-process past that check, as a worker whose key was rotated away would be running.
    await checkInstallationKey(quire.db.pool, quire.config.QUIRE_SECRET_KEYS);
    const otherKey = key();
    // Another process: its own connection to Temporal.
    const otherConnection = await NativeConnection.connect({
      address: temporalAddress(),
      grpcCompression: WORKER_GRPC_COMPRESSION,
    });
    let stoppedItself = 0;
    const other: QuireWorker = await createQuireWorker({
      config: { ...quire.config, QUIRE_SECRET_KEY: otherKey, QUIRE_SECRET_KEYS: [otherKey] },
      pool: quire.db.pool,
      providers: quire.providers,
      connection: otherConnection,
      client: quire.client,
      blobStore: quire.blobStore,
      logger: silentLogger,
      identity: 'fleet-other',
      onFleetKeyMismatch: () => {
        stoppedItself += 1;
      },
      workflowBundle: process.env.QUIRE_TEST_WORKFLOW_BUNDLE
        ? { codePath: process.env.QUIRE_TEST_WORKFLOW_BUNDLE }
        : undefined,
    });
    // Alone on the queue, the stranger takes the first job's workflow task; its claim finds
    // it does not hold the installation's key, so it seals nothing and stops polling.
    const otherRun = other.run();
    const jobs: Array<{ jobId: string }> = [];
    const startOne = async () =>
      jobs.push(
        await quire.client.startJob({
          workspaceId: ws,
          pageId: await quire.page(ws),
          options: { simulated: { lines: 3 } },
        }),
      );
    try {
      await startOne();
      await waitUntil(() => stoppedItself > 0, 30_000);
      await otherRun;
      expect(other.getState()).toBe('STOPPED');
      // Made only now, so that a failure before this point leaves no worker holding the
      // connection the file closes.
      const good = await quire.newWorker('fleet-good');
      await good.runUntil(async () => {
        for (let i = 0; i < 3; i++) await startOne();
        for (const job of jobs) await untilStatus(quire, ws, job.jobId, 'completed', 90_000);
      });
    } finally {
      if (other.getState() === 'RUNNING') other.shutdown();
      await otherRun.catch(() => {});
      await otherConnection.close();
    }
    for (const job of jobs) {
      const attempts = await listAttempts(quire.db.pool, job.jobId);
      // Each job ran one attempt, claimed by the worker holding the key, never closed
      // lease_expired or charged.
      expect(attempts.map((a) => [a.outcome, a.errorCategory])).toEqual([['completed', null]]);
      expect(attempts[0]?.owner).not.toBe('fleet-other');
    }
    expect(await auditInvariants(quire.db.pool)).toEqual([]);
  }, 120_000);

  it('D1 a running worker whose key is rotated away stops with exit 78 at its next claim, and claims nothing', async () => {
    const db = await createTestDatabase();
    const older = key();
    const newer = key();
    try {
      const worker = spawnWorker(quire, 'fleet-rotated', {
        DATABASE_URL: db.url,
        QUIRE_SECRET_KEY: older,
        QUIRE_TASK_QUEUE: `${quire.config.QUIRE_TASK_QUEUE}-rotated`,
        QUIRE_MAINTENANCE_TASK_QUEUE: `${quire.config.QUIRE_TASK_QUEUE}-rotated-maintenance`,
      });
      processes.push(worker);
      await waitHealthy(worker);
      // The operator rotates the installation to a new key, and retires the old one.
      expect(await checkInstallationKey(db.pool, [newer, older])).toMatchObject({ ok: true });
      expect((await checkInstallationKey(db.pool, [newer])).ok).toBe(true);
      const client = createQuireClient(
        {
          ...quire.config,
          DATABASE_URL: db.url,
          QUIRE_TASK_QUEUE: `${quire.config.QUIRE_TASK_QUEUE}-rotated`,
        },
        quire.temporal,
        db.pool,
        ['simulated'],
      );
      const { rows } = await db.pool.query(
        `INSERT INTO workspaces (name) VALUES ('rotated') RETURNING id`,
      );
      const wsId = rows[0].id as number;
      const { pageId } = await seedPage(db.pool, { workspaceId: wsId });
      const job = await client.startJob({
        workspaceId: wsId,
        pageId,
        options: { simulated: { lines: 1 } },
      });
      const exit = await worker.exited;
      expect(exit.code).toBe(78);
      expect(worker.output()).toMatch(/no longer among this installation's keys/);
      expect(await listAttempts(db.pool, job.jobId)).toEqual([]);
    } finally {
      await db.drop();
    }
  });

  it('D1 a webhook secret that does not open with the relay key spends no delivery attempt; a relay with the key delivers it', async () => {
    const sealedWith = key();
    const sub = await createSubscription(quire.db.pool, sealedWith, {
      workspaceId: ws,
      url: 'https://receiver.example.org/hooks',
      secret: uniqueSecret('fleet'),
    });
    const sent: number[] = [];
    const send = async (request: { eventId: string }) => {
      sent.push(Number(request.eventId));
      return { ok: true, statusCode: 204, latencyMs: 1 };
    };
    const relayOptions = {
      pool: quire.db.pool,
      logger: silentLogger,
      pollIntervalMs: 100,
      cursorName: `fleet-${randomBytes(3).toString('hex')}`,
      send,
    };
    const wrong = createWebhookRelay({ ...relayOptions, secretKey: key() });
    await wrong.start();
    const eventId = await commitEvent(quire.db.pool, ws, { pageId: 1 });
    const deferred = await eventually(async () => {
      const [delivery] = await listDeliveries(quire.db.pool, ws, sub.id);
      return delivery?.lastError?.includes('configuration fault') ? delivery : undefined;
    });
    await wrong.stop({ graceMs: 1_000 });
    expect(sent).toEqual([]);
    expect(deferred).toMatchObject({ status: 'pending', attemptCount: 0 });
    const attempts = await quire.db.pool.query(
      'SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE delivery_id = $1',
      [deferred.id],
    );
    expect(attempts.rows[0].n).toBe(0);
    // A relay holding the key (here after a rotation, as an older key) delivers it.
    await quire.db.pool.query(
      'UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1',
      [deferred.id],
    );
    const right = createWebhookRelay({
      ...relayOptions,
      secretKey: key(),
      openingKeys: [key(), sealedWith],
    });
    right.start();
    try {
      await eventually(async () => (sent.includes(eventId) ? true : undefined));
      const [delivered] = await eventually(async () => {
        const rows = await listDeliveries(quire.db.pool, ws, sub.id);
        return rows[0]?.status === 'succeeded' ? rows : undefined;
      });
      expect(delivered).toMatchObject({ attemptCount: 1 });
    } finally {
      await right.stop({ graceMs: 1_000 });
    }
  });

  it('D1 rotation, last step: reseal-webhook-secrets seals every secret under the newest key, so the old key can leave', async () => {
    const db = await createTestDatabase();
    try {
      const [older, newer] = [key(), key()];
      const workspace = await db.pool.query(
        `INSERT INTO workspaces (name) VALUES ('r') RETURNING id`,
      );
      const secret = uniqueSecret('reseal');
      const sub = await createSubscription(db.pool, older, {
        workspaceId: workspace.rows[0].id,
        url: 'https://receiver.example.org/hooks',
        secret,
      });
      await createSubscription(db.pool, key(), {
        workspaceId: workspace.rows[0].id,
        url: 'https://receiver.example.org/other',
        secret: uniqueSecret('stranger'),
      });
      expect(await resealWebhookSecrets(db.pool, [newer, older])).toEqual({
        resealed: 1,
        current: 0,
        unopened: 1,
      });
      expect(await resealWebhookSecrets(db.pool, [newer, older])).toMatchObject({
        resealed: 0,
        current: 1,
      });
      const { rows } = await db.pool.query(
        'SELECT secret_ciphertext FROM webhook_subscriptions WHERE id = $1',
        [sub.id],
      );
      const claimed = {
        subscriptionId: sub.id,
        sealedSecret: rows[0].secret_ciphertext,
      } as Parameters<typeof openDeliverySecret>[1];
      expect(openDeliverySecret([newer], claimed)).toBe(secret);
    } finally {
      await db.drop();
    }
  });
});
