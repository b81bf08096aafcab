import pg from 'pg';
import { backoffCeilingMs } from '../core/backoff';

/**
 * A dedicated LISTEN connection that comes back by itself after Postgres restarts: the wake-up
 * of the webhook relay and of each web process's event hub. A notification is only a hint to
 * read again (readers go by ids and cursors, and poll too), so one lost while the connection
 * was down costs latency, never an event.
 */
export interface NotificationListener {
  /** Connects and listens; a failure is reported through `onLost` and retried, never thrown. */
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly listening: boolean;
}

export interface NotificationListenerOptions {
  connection: pg.ClientConfig;
  /** Channel names are constants of ours, never input: they are written into the statement. */
  channels: readonly string[];
  /** A notification arrived, or the connection just (re)opened: anything may have committed meanwhile. */
  onNotify: () => void;
  /** The connection failed or ended; the next try is in `retryInMs`. */
  onLost?: (reason: unknown, retryInMs: number) => void;
  /** The first delay before reconnecting; it doubles up to 10 s and resets once connected. */
  reconnectMs?: number;
}

const MAX_RECONNECT_MS = 10_000;

export function createNotificationListener(
  options: NotificationListenerOptions,
): NotificationListener {
  const baseReconnectMs = options.reconnectMs ?? 1_000;
  /** Failed connections since the last one that held; each doubles the next delay. */
  let reconnectStep = 0;
  const reconnectMs = () => backoffCeilingMs(reconnectStep, baseReconnectMs, MAX_RECONNECT_MS);
  let client: pg.Client | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let listening = false;
  let stopped = false;

  function scheduleReconnect() {
    if (reconnectTimer || stopped) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      void connect();
    }, reconnectMs());
    reconnectTimer.unref();
    reconnectStep += 1;
  }

  async function connect() {
    if (stopped) return;
    const current = new pg.Client(options.connection);
    const lost = (reason: unknown) => {
      if (client !== current) return;
      client = undefined;
      listening = false;
      current.end().catch(() => {});
      if (stopped) return;
      options.onLost?.(reason, reconnectMs());
      scheduleReconnect();
    };
    current.on('error', lost);
    current.on('end', () => lost(new Error('connection ended')));
    current.on('notification', () => options.onNotify());
    client = current;
    try {
      await current.connect();
      for (const channel of options.channels) await current.query(`LISTEN ${channel}`);
      if (stopped) {
        await current.end().catch(() => {});
        return;
      }
      listening = true;
      reconnectStep = 0;
      options.onNotify();
    } catch (error) {
      lost(error);
    }
  }

  return {
    start: () => {
      stopped = false;
      return connect();
    },
    async stop() {
      stopped = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      reconnectTimer = undefined;
      const closing = client;
      client = undefined;
      listening = false;
      await closing?.end().catch(() => {});
    },
    get listening() {
      return listening;
    },
  };
}
