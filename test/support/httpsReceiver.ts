import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

/**
 * A real local HTTPS webhook receiver for tests and benchmarks: a self-signed certificate for
 * `localhost` / 127.0.0.1 made at test time with the `openssl` CLI, every request recorded
 * with its exact raw body, and a programmable answer. It can go down (connection refused) and
 * come back on the same port.
 */

export interface SelfSignedCertificate {
  key: string;
  cert: string;
}

export function generateSelfSignedCertificate(): SelfSignedCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'quire-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** `Date.now()` when the body was complete. */
  receivedAt: number;
  /** `performance.timeOrigin + performance.now()`, for sub-millisecond latency figures. */
  receivedAtPrecise: number;
}

export interface ReceiverAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
}

export type ReceiverHandler = (
  request: ReceivedRequest,
  index: number,
) => ReceiverAnswer | Promise<ReceiverAnswer>;

export interface HttpsReceiver {
  /** Base URL, `https://localhost:<port>`. */
  origin: string;
  port: number;
  /** For QUIRE_WEBHOOK_ALLOW_HOSTS: `localhost:<port>`. */
  allowHost: string;
  /** The certificate to trust (pass as `ca`). */
  ca: string;
  requests: ReceivedRequest[];
  setHandler(handler: ReceiverHandler): void;
  /** Resolves once `predicate(requests)` holds, checking on every request. */
  waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Stops listening (connections are refused) but keeps what was recorded. */
  goDown(): Promise<void>;
  /** Listens again on the same port. */
  comeUp(): Promise<void>;
  close(): Promise<void>;
}

export async function startHttpsReceiver(
  options: { handler?: ReceiverHandler; certificate?: SelfSignedCertificate; port?: number } = {},
): Promise<HttpsReceiver> {
  const certificate = options.certificate ?? generateSelfSignedCertificate();
  let handler: ReceiverHandler = options.handler ?? (() => ({ status: 204 }));
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  let server: Server | undefined;
  let port = options.port ?? 0;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer(
        { key: certificate.key, cert: certificate.cert, keepAlive: true },
        (req, res) => {
          const chunks: Buffer[] = [];
          req.on('data', (chunk: Buffer) => chunks.push(chunk));
          req.on('end', async () => {
            const received: ReceivedRequest = {
              method: req.method ?? '',
              path: req.url ?? '',
              headers: req.headers,
              body: Buffer.concat(chunks),
              receivedAt: Date.now(),
              receivedAtPrecise: performance.timeOrigin + performance.now(),
            };
            const index = requests.push(received) - 1;
            let answer: ReceiverAnswer;
            try {
              answer = await handler(received, index);
            } catch {
              answer = { status: 500 };
            }
            // After the handler, so a waiter sees whatever the handler recorded.
            for (const wake of waiters) wake();
            if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
            if (res.destroyed) return;
            res.writeHead(answer.status, answer.headers);
            res.end(answer.body ?? '');
          });
        },
      );
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        const address = s.address();
        if (typeof address === 'object' && address) port = address.port;
        server = s;
        resolve();
      });
    });

  const shutdown = () =>
    new Promise<void>((resolve) => {
      const s = server;
      server = undefined;
      if (!s) return resolve();
      s.close(() => resolve());
      s.closeAllConnections();
    });

  await listen();
  return {
    get origin() {
      return `https://localhost:${port}`;
    },
    get port() {
      return port;
    },
    get allowHost() {
      return `localhost:${port}`;
    },
    ca: certificate.cert,
    requests,
    setHandler(next) {
      handler = next;
    },
    waitFor(predicate, timeoutMs = 30_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (predicate(requests)) {
            cleanup();
            resolve();
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `receiver condition not met within ${timeoutMs} ms (${requests.length} requests)`,
            ),
          );
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    goDown: shutdown,
    comeUp: listen,
    close: shutdown,
  };
}
