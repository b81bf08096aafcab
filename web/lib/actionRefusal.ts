import { AsyncLocalStorage } from 'node:async_hooks';
import type http from 'node:http';
import { DATA_POLICY } from './securityHeaders';

/**
 * R8: a server action the signed-in role may not take, posted anyway (directly, not through
 * the console, which never offers it), answers Quire's refusal: 403 with the stable code and
 * one sentence as JSON, `{"error":{"code":"forbidden","message":"the viewer role may not do
 * page.publish"}}`, like every route handler's refusal. Next answers `forbidden()` in an
 * action with a component payload for its own router; nothing else can read that.
 *
 * web/lib/session.ts `requireAct` records the refusal for the request it serves, then calls
 * `forbidden()` (no stack is logged, nothing runs after it); `refuseWithJson`, called by the
 * edge guard (web/lib/edgeGuard.ts) for every POST carrying `Next-Action`, holds that
 * request's record and, when the answer is 403 and a refusal was recorded, writes the JSON in
 * place of Next's body. Any other answer (an origin refusal of proxy.ts, a 404) is left as is.
 */
interface Held {
  refusal?: { code: 'forbidden'; message: string };
}

// One store per process: instrumentation.ts and the app's routes are bundled apart, each with
// its own copy of this module, so the store is kept on the process, by a registered symbol.
const STORE = Symbol.for('quire.actionRefusal');
const shared = globalThis as unknown as Record<symbol, AsyncLocalStorage<Held> | undefined>;
shared[STORE] ??= new AsyncLocalStorage<Held>();
const requests = shared[STORE];

/** Called by `requireAct` before it refuses: the refusal this request answers with. */
export function recordActionRefusal(message: string): void {
  const held = requests.getStore();
  if (held) held.refusal = { code: 'forbidden', message };
}

/** Whether a request is a server action's post (Next reads the same header). */
export function isActionPost(request: http.IncomingMessage): boolean {
  return request.method === 'POST' && typeof request.headers['next-action'] === 'string';
}

/**
 * Runs `handle` (Next's request handler) with a record for this request, and answers a
 * recorded refusal as JSON: once Next sends its 403's head or body, the JSON goes instead.
 */
export function refuseWithJson<T>(response: http.ServerResponse, handle: () => T): T {
  const held: Held = {};
  const writeHead = response.writeHead;
  const write = response.write;
  const end = response.end;
  let replaced = false;
  const refusal = () => {
    if (replaced) return true;
    if (!held.refusal || response.statusCode !== 403 || response.headersSent) return false;
    replaced = true;
    const body = JSON.stringify({ error: held.refusal });
    for (const name of response.getHeaderNames()) {
      if (!['set-cookie', 'vary'].includes(name)) response.removeHeader(name);
    }
    writeHead.call(response, 403, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
      'Content-Security-Policy': DATA_POLICY,
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'same-origin',
    });
    (end as (chunk: string) => void).call(response, body);
    return true;
  };
  // Next's head and body (the component payload) are dropped once the refusal is written;
  // Node's implicit head goes through `writeHead` too.
  response.writeHead = function refusedHead(this: http.ServerResponse, ...args: unknown[]) {
    if (typeof args[0] === 'number') this.statusCode = args[0];
    if (refusal()) return this;
    return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
  } as typeof response.writeHead;
  response.write = function refusedWrite(this: http.ServerResponse, ...args: unknown[]) {
    if (refusal()) return true;
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof response.write;
  response.end = function refusedEnd(this: http.ServerResponse, ...args: unknown[]) {
    if (refusal()) {
      const callback = args.find((a) => typeof a === 'function') as (() => void) | undefined;
      callback?.();
      return this;
    }
    return (end as (...a: unknown[]) => http.ServerResponse).apply(this, args);
  } as typeof response.end;
  return requests.run(held, handle);
}
