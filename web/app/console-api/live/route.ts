import { jobsDigest, providersDigest } from '@quire/db/console';
import { pool } from '@quire/web/lib/server';
import { withSession } from '@quire/web/lib/session';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

const TICK_MS = 1_000;
const MAX_STREAM_MS = 10 * 60_000;

/**
 * GET /console-api/live?topics=jobs,providers: the console's change stream (session only).
 * Job progress and provider pauses have no workspace outbox event, so this route compares
 * cheap digests on the server once a second and pushes `event: <topic>` with the new digest
 * when one moved; the browser only listens. Streams end after ten minutes and the
 * EventSource reconnects, so a slot is never held forever.
 */
export async function GET(request: Request) {
  return withSession(request, async (principal) => {
    const requested = new URL(request.url).searchParams.get('topics') ?? '';
    const topics = requested
      .split(',')
      .filter((t): t is 'jobs' | 'providers' => t === 'jobs' || t === 'providers');
    if (topics.length === 0) {
      return Response.json(
        { error: { code: 'invalid_query', message: 'topics: jobs, providers' } },
        { status: 400 },
      );
    }
    const encoder = new TextEncoder();
    const last = new Map<string, string>();
    let timer: NodeJS.Timeout | undefined;
    let closed = false;
    const startedAt = Date.now();

    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const close = () => {
          if (closed) return;
          closed = true;
          if (timer) clearTimeout(timer);
          try {
            controller.close();
          } catch {
            // Already closed by the client.
          }
        };
        request.signal.addEventListener('abort', close, { once: true });
        controller.enqueue(encoder.encode('retry: 2000\n\n'));
        const tick = async () => {
          if (closed) return;
          try {
            for (const topic of topics) {
              const digest =
                topic === 'jobs'
                  ? await jobsDigest(pool(), principal.workspaceId)
                  : await providersDigest(pool(), principal.workspaceId);
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
        closed = true;
        if (timer) clearTimeout(timer);
      },
    });
    return new Response(stream, {
      headers: {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        'X-Accel-Buffering': 'no',
      },
    });
  });
}
