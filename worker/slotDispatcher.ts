import type pg from 'pg';
import type { QuireClient } from '../client';
import type { Logger } from '../core/logger';
import { redactError } from '../core/redact';
import { JOB_SLOTS_CHANNEL } from '../db/jobEnds';
import { createNotificationListener } from '../db/listener';
import type { Pool } from '../db/pool';

/**
 * M4, inside the worker process: jobs waiting under their workspace's active-job cap start
 * as slots free. A job that ends (or a cap raised by an operator) notifies `quire_job_slots`
 * with its workspace; a poll finds the waiting workspaces anyway, so a lost notification costs
 * latency, never a job. Each pass admits the oldest waiting jobs into the free slots (one
 * transaction per workspace, serialised in PostgreSQL: any number of workers may run this)
 * and starts their workflows through the typed client.
 */
export interface SlotDispatcherOptions {
  pool: Pool;
  client: QuireClient;
  logger: Logger;
  /** For the LISTEN connection; defaults to the pool's connection settings. */
  databaseUrl?: string;
  /**
   * Fallback polling period while the LISTEN connection holds (default 60 s): every job end
   * and cap change notifies, and reconnecting runs a pass, so this is a backstop. While the
   * connection is down the dispatcher polls at most every 5 s.
   */
  pollIntervalMs?: number;
}

export interface SlotDispatcher {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Runs one pass over every workspace with waiting jobs now (tests, start-up). */
  pass(): Promise<number>;
}

/** The polling period while the LISTEN connection is down: notifications are not arriving. */
const UNLISTENED_POLL_MS = 5_000;

export function createSlotDispatcher(options: SlotDispatcherOptions): SlotDispatcher {
  const { pool, client, logger } = options;
  const pollMs = options.pollIntervalMs ?? 60_000;
  const unlistenedPollMs = Math.min(pollMs, UNLISTENED_POLL_MS);
  const listenConfig: pg.ClientConfig =
    options.databaseUrl !== undefined
      ? { connectionString: options.databaseUrl }
      : { ...(pool as unknown as { options: pg.ClientConfig }).options };
  let running: Promise<number> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;

  async function passOnce(): Promise<number> {
    let admitted = 0;
    const workspaces = await client.workspacesWithWaitingJobs();
    for (const workspaceId of workspaces) {
      try {
        admitted += await client.dispatchWaitingJobs(workspaceId);
      } catch (error) {
        // Admitted but not started: the reconciler (J6) starts it; the next pass tries others.
        logger.warn(
          { component: 'slot-dispatcher', workspaceId, error: redactError(error) },
          'dispatch of waiting jobs failed',
        );
      }
    }
    return admitted;
  }

  /** One pass at a time; a wake during a pass runs one more after it. */
  function pass(): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let total = 0;
      do {
        again = false;
        total += await passOnce().catch((error) => {
          logger.warn(
            { component: 'slot-dispatcher', error: redactError(error) },
            'slot dispatch pass failed',
          );
          return 0;
        });
      } while (again && !stopped);
      return total;
    })().finally(() => {
      running = undefined;
    });
    return running;
  }

  const listener = createNotificationListener({
    connection: { ...listenConfig, application_name: 'quire-slot-dispatcher-listen' },
    channels: [JOB_SLOTS_CHANNEL],
    onNotify: () => {
      if (!stopped) void pass();
    },
    onLost: (reason, retryInMs) =>
      logger.warn(
        { component: 'slot-dispatcher', reason: redactError(reason), retryInMs },
        'slot dispatcher lost its LISTEN connection',
      ),
  });

  /** Re-armed after each poll, so the period follows the LISTEN connection's state. */
  function schedulePoll() {
    if (stopped) return;
    timer = setTimeout(
      () => {
        void pass();
        schedulePoll();
      },
      listener.listening ? pollMs : unlistenedPollMs,
    );
    timer.unref();
  }

  return {
    async start() {
      stopped = false;
      await listener.start();
      schedulePoll();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await listener.stop();
      await running;
    },
    pass,
  };
}
