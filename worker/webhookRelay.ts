import { setMaxListeners } from 'node:events';
import type pg from 'pg';
import { backoffCeilingMs } from '../core/backoff';
import { cloudEventBody } from '../core/cloudevents';
import { KEY_MISMATCH } from '../core/failures';
import type { Logger } from '../core/logger';
import { redactError } from '../core/redact';
import { SecretKeyMismatchError } from '../core/secretKeys';
import { DEFAULT_RETRY_SCHEDULE, type RetrySchedule } from '../core/webhookSchedule';
import { createNotificationListener } from '../db/listener';
import type { Pool } from '../db/pool';
import { deferUnopenedDelivery, openDeliverySecret } from '../db/webhookSecrets';
import {
  type AttemptResult,
  type ClaimedDelivery,
  claimDueDeliveries,
  DEFAULT_RELAY_CURSOR,
  fanOutEvents,
  nextDueInMs,
  outboxHasEventsAfter,
  recordDeliveryAttempt,
} from '../db/webhooks';
import { type AllowList, type LookupAll, parseAllowHosts } from '../net/ssrf';
import {
  DEFAULT_TIMEOUT_MS,
  type SendWebhookOptions,
  sendWebhook,
  type WebhookRequest,
} from '../net/webhookSender';

/**
 * W2 dispatch, inside the worker process. Woken by LISTEN on the outbox channel (a dedicated
 * connection that reconnects after a Postgres restart), by the next delivery falling due, and
 * by a slow polling timer as a fallback (fast while the LISTEN connection is down), each pass:
 *   1. fans new outbox events out into delivery rows, advancing a cursor kept in Postgres in
 *      the same transaction, so a SIGKILL at any point neither skips nor half-applies events;
 *   2. claims due deliveries (SKIP LOCKED, leased) up to the free concurrency and sends them.
 * The claim counts the attempt before the send (db/webhookClaims.ts): a delivery whose sender
 * died is sent again on its retry schedule, at-least-once with the same event id, and a send
 * that kills the relay every time goes dead at the end of the schedule. Logs carry ids, status codes, latency and redacted errors: never a
 * secret, a URL path or a body.
 */

export type SendFunction = (
  request: WebhookRequest,
  options: SendWebhookOptions,
) => ReturnType<typeof sendWebhook>;

export interface WebhookRelayOptions {
  pool: Pool;
  /** QUIRE_SECRET_KEY: opens the sealed subscription secrets. */
  secretKey: string;
  /** D1: every key that opens, newest first (rotation); default: `secretKey` alone. */
  openingKeys?: readonly string[];
  logger: Logger;
  /** For the LISTEN connection; defaults to the pool's connection string. */
  databaseUrl?: string;
  /** Sends in flight at once (default 8). */
  concurrency?: number;
  /**
   * Fallback polling period while the LISTEN connection holds (default 30 s). A notification
   * is lost only with its connection, and reconnecting runs a pass, so this poll is a
   * backstop, not the way work is found. While the connection is down the relay polls at
   * most every second.
   */
  pollIntervalMs?: number;
  /**
   * How long a wake waits before its pass (default 20 ms), so the several commits of one page
   * (attempt, revision, job) make one pass instead of one each.
   */
  wakeCoalesceMs?: number;
  fanOutBatchSize?: number;
  /** How long a claimed delivery is held before another relay may send it again. */
  leaseMs?: number;
  /** Per-request timeout (default 15 s). */
  requestTimeoutMs?: number;
  schedule?: RetrySchedule;
  /** Config QUIRE_WEBHOOK_ALLOW_HOSTS (development and tests only); default none. */
  allowHosts?: AllowList | string;
  /** Extra trust anchors (tests, local receivers). */
  ca?: string | Buffer;
  lookup?: LookupAll;
  cursorName?: string;
  /** Delay before reconnecting the LISTEN connection (doubles up to 10 s). */
  listenReconnectMs?: number;
  /** Default grace for `stop()` (default 10 s). */
  shutdownGraceMs?: number;
  send?: SendFunction;
  /** Test seam: runs after a delivery is claimed and before it is sent. */
  onBeforeSend?: (delivery: { deliveryId: number; eventId: number }) => Promise<void> | void;
}

export interface WebhookRelayStats {
  passes: number;
  eventsFannedOut: number;
  attempts: number;
  succeeded: number;
  failed: number;
  listening: boolean;
}

export interface WebhookRelay {
  start(): Promise<void>;
  /** Stops claiming, waits up to `graceMs` for sends in flight, then aborts the rest. */
  stop(options?: { graceMs?: number }): Promise<void>;
  /** Runs a pass now (also what a NOTIFY does). */
  wake(): void;
  stats(): WebhookRelayStats;
}

/** D1: how long a delivery whose secret this relay cannot open waits for another relay. */
const KEY_FAULT_RETRY_MS = 30_000;
/**
 * After a failed pass (the database unreachable, say) the next waits the poll interval
 * doubled once per failure in a row, five times at most, and never more than 30 s.
 */
const FAILED_PASS_MAX_DOUBLINGS = 5;
const FAILED_PASS_MAX_MS = 30_000;
/** The polling period while the LISTEN connection is down: notifications are not arriving. */
const UNLISTENED_POLL_MS = 1_000;

export const NOTIFY_CHANNELS = ['quire_events', 'quire_webhook_deliveries'] as const;

export function createWebhookRelay(options: WebhookRelayOptions): WebhookRelay {
  const { pool, secretKey, logger } = options;
  const openingKeys = options.openingKeys?.length ? options.openingKeys : [secretKey];
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const pollIntervalMs = options.pollIntervalMs ?? 30_000;
  const unlistenedPollMs = Math.min(pollIntervalMs, UNLISTENED_POLL_MS);
  const wakeCoalesceMs = Math.max(0, options.wakeCoalesceMs ?? 20);
  const batchSize = options.fanOutBatchSize ?? 500;
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  const leaseMs = options.leaseMs ?? requestTimeoutMs + 30_000;
  const schedule = options.schedule ?? DEFAULT_RETRY_SCHEDULE;
  const cursorName = options.cursorName ?? DEFAULT_RELAY_CURSOR;
  const allowHosts =
    typeof options.allowHosts === 'object'
      ? options.allowHosts
      : parseAllowHosts(options.allowHosts);
  const send = options.send ?? sendWebhook;
  // The LISTEN connection uses the pool's own settings unless told otherwise.
  const listenConfig: pg.ClientConfig =
    options.databaseUrl !== undefined
      ? { connectionString: options.databaseUrl }
      : { ...pool.options };

  const stats: Omit<WebhookRelayStats, 'listening'> = {
    passes: 0,
    eventsFannedOut: 0,
    attempts: 0,
    succeeded: 0,
    failed: 0,
  };
  const inFlight = new Set<Promise<void>>();
  const abort = new AbortController();
  // Every send in flight listens for the stop signal.
  setMaxListeners(concurrency + 10, abort.signal);
  let started = false;
  let stopping = false;
  let loopDone: Promise<void> | undefined;
  let pendingWake = false;
  let wakeWaiter: (() => void) | undefined;
  /** The fan-out cursor this relay last saw; undefined until its first fan-out. */
  let knownCursor: number | undefined;
  const listener = createNotificationListener({
    connection: { ...listenConfig, application_name: 'quire-webhook-relay-listen' },
    channels: NOTIFY_CHANNELS,
    // Anything committed while we were not listening is found by the pass this wakes.
    onNotify: () => wake(),
    onLost: (reason, retryInMs) =>
      logger.warn(
        { component: 'webhook-relay', reason: redactError(reason), retryInMs },
        'relay lost its LISTEN connection',
      ),
    reconnectMs: options.listenReconnectMs ?? 1000,
  });

  function wake() {
    pendingWake = true;
    wakeWaiter?.();
  }

  async function sleep(ms: number) {
    if (!pendingWake && !stopping) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, ms));
        wakeWaiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wakeWaiter = undefined;
    }
    // Woken: the notifications of the commits just behind this one join the same pass.
    if (pendingWake && !stopping && wakeCoalesceMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, wakeCoalesceMs));
    }
  }

  async function deliver(claimed: ClaimedDelivery) {
    const eventId = claimed.event.id;
    let result: AttemptResult;
    let secret: string;
    try {
      secret = openDeliverySecret(openingKeys, claimed);
    } catch (error) {
      if (!(error instanceof SecretKeyMismatchError)) throw error;
      // D1: this relay runs with another key than the one that sealed the secret: a fault of
      // the fleet's configuration, not of the receiver. Nothing is sent and no attempt is
      // spent; the delivery waits for a relay that holds the key.
      logger.error(
        {
          component: 'webhook-relay',
          deliveryId: claimed.deliveryId,
          eventId,
          subscriptionId: claimed.subscriptionId,
          errorClass: KEY_MISMATCH,
          retryInMs: KEY_FAULT_RETRY_MS,
        },
        "webhook secret does not open with this relay's QUIRE_SECRET_KEY: the fleet runs with different keys",
      );
      await deferUnopenedDelivery(pool, claimed, KEY_FAULT_RETRY_MS).catch(() => {});
      return;
    }
    try {
      await options.onBeforeSend?.({ deliveryId: claimed.deliveryId, eventId });
      result = await send(
        { url: claimed.url, secret, eventId: String(eventId), body: cloudEventBody(claimed.event) },
        {
          timeoutMs: requestTimeoutMs,
          allowHosts,
          lookup: options.lookup,
          ca: options.ca,
          signal: abort.signal,
        },
      );
    } catch (error) {
      result = { ok: false, latencyMs: 0, error: redactError(error) };
    }
    stats.attempts += 1;
    if (result.ok) stats.succeeded += 1;
    else stats.failed += 1;
    try {
      const recorded = await recordDeliveryAttempt(pool, claimed.deliveryId, result, {
        schedule,
        attemptNumber: claimed.attemptNumber,
      });
      const log = {
        component: 'webhook-relay',
        deliveryId: claimed.deliveryId,
        eventId,
        subscriptionId: claimed.subscriptionId,
        workspaceId: claimed.workspaceId,
        attempt: claimed.attemptNumber,
        statusCode: result.statusCode,
        latencyMs: result.latencyMs,
        outcome: recorded.outcome,
        nextAttemptAt: recorded.nextAttemptAt?.toISOString(),
        error: result.error,
      };
      if (result.ok) logger.info(log, 'webhook delivered');
      else logger.warn(log, 'webhook delivery attempt failed');
    } catch (error) {
      // Not recorded: the lease runs out and the delivery is sent again (at-least-once).
      logger.error(
        {
          component: 'webhook-relay',
          deliveryId: claimed.deliveryId,
          eventId,
          error: redactError(error),
        },
        'could not record a webhook attempt',
      );
    }
  }

  function launch(claimed: ClaimedDelivery) {
    const task = deliver(claimed).finally(() => {
      inFlight.delete(task);
      wake();
    });
    inFlight.add(task);
  }

  async function pass(): Promise<number | undefined> {
    stats.passes += 1;
    if (knownCursor === undefined || (await outboxHasEventsAfter(pool, knownCursor))) {
      for (;;) {
        const fanned = await fanOutEvents(pool, { cursorName, batchSize });
        knownCursor = fanned.cursor;
        stats.eventsFannedOut += fanned.events;
        if (fanned.events < batchSize || stopping) break;
      }
    }
    const capacity = concurrency - inFlight.size;
    if (capacity <= 0 || stopping) return undefined;
    // Claim only when something is due: an idle pass is then two one-row reads, not a
    // claiming transaction.
    let dueInMs = await nextDueInMs(pool);
    if (dueInMs === null || dueInMs > 0) return dueInMs ?? undefined;
    const claimed = await claimDueDeliveries(pool, { limit: capacity, leaseMs, schedule });
    for (const delivery of claimed) launch(delivery);
    if (claimed.length === capacity) return 0;
    dueInMs = await nextDueInMs(pool);
    return dueInMs ?? undefined;
  }

  async function loop() {
    let failures = 0;
    while (!stopping) {
      pendingWake = false;
      let waitMs = listener.listening ? pollIntervalMs : unlistenedPollMs;
      try {
        const dueInMs = await pass();
        failures = 0;
        if (dueInMs !== undefined) waitMs = Math.min(waitMs, Math.max(dueInMs, 5));
      } catch (error) {
        failures += 1;
        waitMs = backoffCeilingMs(
          Math.min(failures, FAILED_PASS_MAX_DOUBLINGS),
          unlistenedPollMs,
          FAILED_PASS_MAX_MS,
        );
        logger.warn(
          { component: 'webhook-relay', error: redactError(error), retryInMs: waitMs },
          'webhook relay pass failed',
        );
      }
      await sleep(waitMs);
    }
  }

  return {
    async start() {
      if (started) throw new Error('webhook relay already started');
      started = true;
      await listener.start();
      loopDone = loop();
      logger.info(
        { component: 'webhook-relay', concurrency, pollIntervalMs },
        'webhook relay started',
      );
    },

    async stop(stopOptions = {}) {
      if (!started || stopping) {
        await loopDone;
        return;
      }
      stopping = true;
      wake();
      await listener.stop();
      await loopDone;
      const graceMs = stopOptions.graceMs ?? options.shutdownGraceMs ?? 10_000;
      const drained = Promise.allSettled([...inFlight]).then(() => true);
      const inTime = await Promise.race([
        drained,
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), graceMs).unref()),
      ]);
      if (!inTime) {
        // Cut-off sends are recorded as failed attempts and retried on schedule.
        abort.abort();
        await Promise.allSettled([...inFlight]);
      }
      logger.info({ component: 'webhook-relay', drained: inTime }, 'webhook relay stopped');
    },

    wake,

    stats() {
      return { ...stats, listening: listener.listening };
    },
  };
}
