import 'server-only';
import { streamPrincipal } from '@quire/core/actor';
import { jobsDigest, providersDigest } from '@quire/db/console';
import type { Principal } from '@quire/db/workspaces';
import { ApiError } from './api';
import { config, pool } from './server';
import { type StreamCredential, watchCredential } from './streamCredential';
import { acquireStreamSlot } from './streamSlots';

export type LiveTopic = 'jobs' | 'providers';

const TICK_MS = 1_000;
const MAX_STREAM_MS = 10 * 60_000;

/**
 * The jobs digest a live page was rendered at, read before anything the page shows: a change
 * in between then moves the stream's digest away from it and refreshes the page, where a
 * baseline read after the page's rows would already hold the change and hide it.
 */
export function liveJobsBaseline(workspaceId: number): Promise<string> {
  return jobsDigest(pool(), workspaceId);
}

/** `jobs,providers` as asked for; 400 `invalid_query` when none is known. */
export function liveTopics(requested: string | null): LiveTopic[] {
  const topics = (requested ?? '')
    .split(',')
    .filter((t): t is LiveTopic => t === 'jobs' || t === 'providers');
  if (topics.length === 0) throw new ApiError('invalid_query', 'topics: jobs, providers');
  return topics;
}

/**
 * The console's change stream (GET /console-api/live). Job progress and provider pauses have
 * no workspace outbox event, so the server compares cheap digests once a second and pushes
 * `event: <topic>` with the new digest when one moved; the browser only listens. Bounded per
 * principal (QUIRE_CONSOLE_MAX_STREAMS_PER_KEY, counted across web replicas with the other
 * streams of the workspace, see streamSlots.ts) and in time: a stream ends after ten minutes
 * and the EventSource reconnects, so a slot is never held forever.
 */
export async function openConsoleLive(args: {
  principal: Principal;
  /** X3: the session that opened it, re-checked while it is open. */
  credential: StreamCredential;
  topics: LiveTopic[];
  signal: AbortSignal;
}): Promise<Response> {
  const { principal, topics } = args;
  let lost = () => {};
  const slot = await acquireStreamSlot({
    workspaceId: principal.workspaceId,
    principal: streamPrincipal(principal.actor, 'console'),
    perPrincipal: config().QUIRE_CONSOLE_MAX_STREAMS_PER_KEY,
    describe: 'live console streams per signed-in key',
    onLost: () => lost(),
  });
  const encoder = new TextEncoder();
  const last = new Map<string, string>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const startedAt = Date.now();
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;

  let stopWatching = () => {};
  const close = () => {
    if (closed) return;
    closed = true;
    stopWatching();
    slot.release();
    if (timer) clearTimeout(timer);
    try {
      controllerRef?.close();
    } catch {
      // Already closed by the client.
    }
  };
  lost = close;

  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controllerRef = controller;
      controller.enqueue(encoder.encode('retry: 2000\n\n'));
      stopWatching = watchCredential(args.credential, close);
      const tick = async () => {
        if (closed) return;
        try {
          for (const topic of topics) {
            const digest =
              topic === 'jobs'
                ? await jobsDigest(pool(), principal.workspaceId)
                : await providersDigest(pool(), principal.workspaceId);
            if (closed) return;
            if (last.get(topic) !== digest) {
              last.set(topic, digest);
              controller.enqueue(encoder.encode(`event: ${topic}\ndata: ${digest}\n\n`));
            }
          }
          if (Date.now() - startedAt > MAX_STREAM_MS) return close();
        } catch {
          // The browser reconnects; a database hiccup costs one tick.
          return close();
        }
        timer = setTimeout(tick, TICK_MS);
      };
      void tick();
    },
    cancel() {
      close();
    },
  });
  args.signal.addEventListener('abort', close, { once: true });
  if (args.signal.aborted) close();
  return new Response(stream, {
    headers: {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    },
  });
}
