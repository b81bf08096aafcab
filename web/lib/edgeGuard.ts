import http from 'node:http';
import { clientAddressOf, parseTrustedProxies } from '@quire/core/trustedProxies';
import { isActionPost, refuseWithJson } from './actionRefusal';
import { DATA_POLICY } from './securityHeaders';

/**
 * X4, X5: what the web process decides about a request before Next.js reads it, at the one
 * place that still sees the connection (`next start` hands its routes only the headers).
 *
 * - X4: the client's address. Next copies the socket's peer into `X-Forwarded-For` only when
 *   the request has none, so behind no proxy a client could name any address there. This
 *   guard writes `x-quire-client-address` on every request (a client's own is overwritten):
 *   the peer, or, from a trusted proxy, the right-most forwarded address no trusted proxy
 *   wrote (core/trustedProxies.ts). Rate limits read only that header (web/lib/signin.ts).
 * - X5: a path whose percent-encoding does not decode (`/items/%E0%A4%A`) is refused with 400
 *   `invalid_path` as JSON, with the data responses' security headers, and logged by code.
 *   Next would otherwise fail to match it and answer a plain-text 500, unlogged.
 *
 * - R8: a server action's post runs with a record of its refusal, if any, so a forbidden act
 *   answers Quire's JSON (web/lib/actionRefusal.ts).
 *
 * Installed once per process by instrumentation.ts, over `http.Server.prototype.emit`, the
 * only hook `next start` offers ahead of its own request handler.
 */
export const CLIENT_ADDRESS_HEADER = 'x-quire-client-address';

const installed = Symbol.for('quire.edgeGuard');

/** Whether every path segment decodes as UTF-8 percent-encoding. */
export function pathDecodes(url: string | undefined): boolean {
  const path = (url ?? '/').split('?')[0]!;
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

function refuseMalformedPath(request: http.IncomingMessage, response: http.ServerResponse) {
  console.warn(
    JSON.stringify({
      level: 'warn',
      service: 'quire-web',
      msg: 'request refused',
      code: 'invalid_path',
      method: request.method,
    }),
  );
  const body = JSON.stringify({
    error: { code: 'invalid_path', message: 'the path is not valid percent-encoded UTF-8' },
  });
  // The body is not read: the connection closes after the answer.
  response.writeHead(400, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Content-Security-Policy': DATA_POLICY,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'same-origin',
    Connection: 'close',
  });
  response.end(body);
}

export function installEdgeGuard(trustedProxies: string): void {
  const proto = http.Server.prototype as unknown as Record<symbol, boolean> & {
    emit: (event: string | symbol, ...args: unknown[]) => boolean;
  };
  if (proto[installed]) return;
  proto[installed] = true;
  const proxies = parseTrustedProxies(trustedProxies);
  const emit = proto.emit;
  proto.emit = function guardedEmit(event, ...args) {
    if (event === 'request') {
      const [request, response] = args as [http.IncomingMessage, http.ServerResponse];
      const forwarded = request.headers['x-forwarded-for'];
      request.headers[CLIENT_ADDRESS_HEADER] = clientAddressOf(
        request.socket.remoteAddress,
        Array.isArray(forwarded) ? forwarded.join(',') : forwarded,
        proxies,
      );
      if (!pathDecodes(request.url)) {
        refuseMalformedPath(request, response);
        return true;
      }
      // R8: a server action's refusal answered as Quire's JSON (web/lib/actionRefusal.ts).
      if (isActionPost(request)) {
        return refuseWithJson(response, () => emit.call(this, event, ...args));
      }
    }
    return emit.call(this, event, ...args);
  };
}
