import 'server-only';
import { streamPrincipal } from '@quire/core/actor';
import { toCloudEvent } from '@quire/core/cloudevents';
import { redactError } from '@quire/core/redact';
import {
  highWaterMark,
  newestEventId,
  type OutboxEvent,
  readAllEventsAfter,
  readEventsAfter,
} from '@quire/db/events';
import { createNotificationListener, type NotificationListener } from '@quire/db/listener';
import type { Principal } from '@quire/db/workspaces';
import { ApiError } from './api';
import { config, pool } from './server';
import { type StreamCredential, watchCredential } from './streamCredential';
import { acquireStreamSlot } from './streamSlots';

/**
 * S1: the per-workspace event stream. One hub per web process holds the only LISTEN connection
 * (channel `quire_events`), reads each new outbox batch once, and keeps the most recent events in
 * memory; every open stream is woken by it and serves itself from that window, or from Postgres
 * when it is further behind (a resume after a long absence). A polling timer wakes the hub when
 * a NOTIFY is lost (LISTEN connection down, Postgres restarted).
 *
 * Why reading by position is enough (D10): positions are stamped after commit, in order, one
 * batch after another (db/events.ts), so nothing below the hub's cursor can appear later, even
 * from a transaction that committed late. The SSE `id:` is that position; the CloudEvent's own
 * `id` stays the event's identity. A stream's cursor can move past positions the workspace
 * filter hid; it says so with a `dev.quire.stream.checkpoint` event whose `id:` is the new
 * cursor, so a reconnect resumes after it instead of re-reading other workspaces' events.
 */

export const STREAM_READY = 'dev.quire.stream.ready';
export const STREAM_CHECKPOINT = 'dev.quire.stream.checkpoint';
const RING_SIZE = 5_000;
const READ_BATCH = 500;
/** A client that cannot keep up is cut off; it reconnects with Last-Event-ID and loses nothing. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

function log(level: 'info' | 'warn', msg: string, fields: Record<string, unknown> = {}) {
  console[level === 'warn' ? 'warn' : 'log'](
    JSON.stringify({ level, service: 'quire-web', component: 'event-stream', msg, ...fields }),
  );
}

class EventHub {
  /** Every event with floor < position <= cursor is in `ring`, oldest first. */
  cursor = 0;
  floor = 0;
  ring: OutboxEvent[] = [];
  private starting?: Promise<void>;
  private readonly subscribers = new Set<() => void>();
  private pumping = false;
  private pumpAgain = false;
  private listener?: NotificationListener;
  private pollTimer?: NodeJS.Timeout;
  private stopped = false;

  start(): Promise<void> {
    this.starting ??= this.init().catch((error) => {
      this.starting = undefined;
      throw error;
    });
    return this.starting;
  }

  private async init() {
    this.stopped = false;
    const hw = await highWaterMark(pool());
    this.cursor = hw;
    this.floor = hw;
    this.listener = createNotificationListener({
      connection: { connectionString: config().DATABASE_URL, application_name: 'quire-web-events' },
      channels: ['quire_events'],
      // Whatever was committed while nobody listened is read on the wake after (re)connecting.
      onNotify: () => this.wake(),
      onLost: (reason, retryInMs) =>
        log('warn', 'event hub lost its LISTEN connection', {
          error: redactError(reason),
          retryInMs,
        }),
      reconnectMs: 500,
    });
    void this.listener.start();
    this.pollTimer = setInterval(() => this.wake(), config().QUIRE_SSE_POLL_MS);
    this.pollTimer.unref();
  }

  subscribe(fn: () => void): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  get streams(): number {
    return this.subscribers.size;
  }

  wake() {
    if (this.stopped) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    void this.pump();
  }

  private async pump() {
    this.pumping = true;
    const before = this.cursor;
    try {
      do {
        this.pumpAgain = false;
        for (;;) {
          const events = await readAllEventsAfter(pool(), this.cursor, READ_BATCH);
          if (events.length === 0) break;
          this.ring.push(...events);
          this.cursor = events[events.length - 1]!.position;
          if (this.ring.length > RING_SIZE) {
            const dropped = this.ring.splice(0, this.ring.length - RING_SIZE);
            this.floor = dropped[dropped.length - 1]!.position;
          }
          if (events.length < READ_BATCH) break;
        }
      } while (this.pumpAgain);
    } catch (error) {
      log('warn', 'event hub read failed', { error: redactError(error) });
    } finally {
      this.pumping = false;
    }
    if (this.cursor !== before) for (const notify of this.subscribers) notify();
  }

  async stop() {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    const listener = this.listener;
    this.listener = undefined;
    await listener?.stop();
    this.starting = undefined;
    this.ring = [];
  }
}

const globals = globalThis as unknown as { quireEventHub?: EventHub };

export function eventHub(): EventHub {
  globals.quireEventHub ??= new EventHub();
  return globals.quireEventHub;
}

/** Closes the hub's LISTEN connection and timers (tests, shutdown). */
export async function closeEventHub(): Promise<void> {
  await globals.quireEventHub?.stop();
  globals.quireEventHub = undefined;
}

/** `Last-Event-ID` (header wins) or `lastEventId`; a malformed header is a 400. */
export function resumeCursor(request: Request, queryValue: number | undefined): number | undefined {
  const header = request.headers.get('last-event-id');
  if (header !== null && header.trim() !== '') {
    if (!/^\d{1,15}$/.test(header.trim())) {
      throw new ApiError('invalid_last_event_id', 'Last-Event-ID must be an event id');
    }
    return Number(header.trim());
  }
  return queryValue;
}

/**
 * A Last-Event-ID beyond every id this installation has handed out is refused (400
 * `last_event_id_ahead`) rather than followed: a stream would skip every event until ids caught
 * up with it, silently. It comes from another installation or from before a database restore;
 * the client must start afresh without it.
 */
async function assertResumable(resumeAfter: number | undefined, hubCursor: number) {
  if (resumeAfter === undefined || resumeAfter <= hubCursor) return;
  const newest = await newestEventId(pool());
  if (resumeAfter > newest) {
    throw new ApiError(
      'last_event_id_ahead',
      `Last-Event-ID ${resumeAfter} is ahead of the newest event (${newest}); reconnect without it`,
    );
  }
}

export async function openEventStream(args: {
  principal: Principal;
  /** X3: what let the request in, re-checked while the stream is open. */
  credential: StreamCredential;
  resumeAfter: number | undefined;
  signal: AbortSignal;
}): Promise<Response> {
  const hub = eventHub();
  await hub.start();
  await assertResumable(args.resumeAfter, hub.cursor);
  const workspaceId = args.principal.workspaceId;
  let lost = () => {};
  const slot = await acquireStreamSlot({
    workspaceId,
    principal: streamPrincipal(args.principal.actor, 'api'),
    perPrincipal: config().QUIRE_SSE_MAX_STREAMS_PER_KEY,
    describe: 'event streams per API key',
    onLost: () => lost(),
  });
  const release = () => slot.release();
  const encoder = new TextEncoder();
  const startedAt = hub.cursor;
  let cursor = args.resumeAfter ?? startedAt;
  let lastSentId = cursor;
  let lastCheckpointAt = 0;
  let checkpointTimer: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
  let running = false;
  let again = false;
  let closed = false;
  let stopWatching = () => {};

  const close = () => {
    if (closed) return;
    closed = true;
    stopWatching();
    release();
    unsubscribe?.();
    if (heartbeat) clearInterval(heartbeat);
    if (checkpointTimer) clearTimeout(checkpointTimer);
    try {
      controllerRef?.close();
    } catch {
      // Already closed by the client.
    }
  };

  lost = () => {
    log('warn', 'event stream ended: its slot lease ran out', { workspaceId });
    close();
  };

  const write = (text: string) => {
    if (closed || !controllerRef) return;
    controllerRef.enqueue(encoder.encode(text));
    if ((controllerRef.desiredSize ?? 0) < -MAX_BUFFERED_BYTES) {
      log('warn', 'event stream cut off: client too slow', { workspaceId });
      close();
    }
  };

  const sendEvents = (events: OutboxEvent[]) => {
    for (const event of events) {
      if (event.position <= lastSentId) continue;
      write(
        `id: ${event.position}\nevent: ${event.type}\ndata: ${JSON.stringify(toCloudEvent(event))}\n\n`,
      );
      lastSentId = event.position;
    }
  };

  const sendCheckpoint = () => {
    checkpointTimer = undefined;
    if (closed || cursor <= lastSentId) return;
    write(`id: ${cursor}\nevent: ${STREAM_CHECKPOINT}\ndata: ${JSON.stringify({ cursor })}\n\n`);
    lastSentId = cursor;
    lastCheckpointAt = Date.now();
  };

  const maybeCheckpoint = () => {
    if (cursor <= lastSentId || checkpointTimer) return;
    const wait = lastCheckpointAt + config().QUIRE_SSE_CHECKPOINT_MS - Date.now();
    if (wait <= 0) sendCheckpoint();
    else checkpointTimer = setTimeout(sendCheckpoint, wait);
  };

  const catchUp = async () => {
    for (;;) {
      if (closed) return;
      if (cursor >= hub.floor) {
        // Served from the hub's window: a synchronous snapshot of (floor, cursor].
        sendEvents(hub.ring.filter((e) => e.position > cursor && e.workspaceId === workspaceId));
        cursor = Math.max(cursor, hub.cursor);
        return;
      }
      // Further behind than the window: read this workspace's events from Postgres. Everything
      // up to the hub's cursor (read before this query) is visible to the query.
      const visible = hub.cursor;
      const events = await readEventsAfter(pool(), workspaceId, cursor, READ_BATCH);
      sendEvents(events);
      if (events.length === READ_BATCH) {
        cursor = events[events.length - 1]!.position;
        continue;
      }
      cursor = Math.max(cursor, events[events.length - 1]?.position ?? cursor, visible);
      return;
    }
  };

  const pass = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await catchUp();
      } while (again && !closed);
      maybeCheckpoint();
    } catch (error) {
      log('warn', 'event stream read failed', { workspaceId, error: redactError(error) });
      // The client reconnects with its Last-Event-ID; nothing is lost.
      close();
    } finally {
      running = false;
    }
  };

  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controllerRef = controller;
        write(
          `retry: 2000\nevent: ${STREAM_READY}\ndata: ${JSON.stringify({
            highWaterMark: startedAt,
            resumeAfter: cursor,
          })}\n\n`,
        );
        unsubscribe = hub.subscribe(() => void pass());
        stopWatching = watchCredential(args.credential, () => {
          log('info', 'event stream ended: its key or session no longer holds', { workspaceId });
          close();
        });
        heartbeat = setInterval(
          () => write(`: heartbeat ${Date.now()}\n\n`),
          config().QUIRE_SSE_HEARTBEAT_MS,
        );
        void pass();
      },
      cancel() {
        close();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }),
  );
  args.signal.addEventListener('abort', close, { once: true });
  if (args.signal.aborted) close();

  return new Response(stream, {
    headers: {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    },
  });
}
