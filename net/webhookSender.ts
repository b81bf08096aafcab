import https from 'node:https';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { redact, redactError } from '../core/redact';
import { parseRetryAfter } from '../core/webhookSchedule';
import { signedDeliveryHeaders, unixSeconds } from '../core/webhookSignature';
import { type AllowList, type LookupAll, pinnedLookup, resolveTarget, SsrfError } from './ssrf';

/**
 * W2: one delivery attempt, one HTTPS POST. The body is sent exactly as given; the timestamp
 * and both signatures are made here, per attempt, so a retry never carries a stale signature.
 * The target is resolved and checked immediately before connecting and the socket is pinned to
 * the checked address. Redirects are never followed: a 3xx is a failed attempt.
 */
export const DEFAULT_TIMEOUT_MS = 15_000;
const MAX_RESPONSE_BYTES = 64 * 1024;
const USER_AGENT = 'Quire-Webhooks/1';

export interface WebhookRequest {
  url: string;
  secret: string;
  /** The outbox id as a string: `webhook-id` and the CloudEvent id. */
  eventId: string;
  /** The exact CloudEvent JSON. */
  body: string;
}

export interface SendWebhookOptions {
  timeoutMs?: number;
  allowHosts?: AllowList;
  lookup?: LookupAll;
  /** Extra trust anchors (tests' self-signed receiver); production uses the system store. */
  ca?: string | Buffer;
  /** Clock for the signature timestamp, in ms. */
  now?: () => number;
  signal?: AbortSignal;
  agent?: https.Agent;
}

export interface SendResult {
  ok: boolean;
  statusCode?: number;
  latencyMs: number;
  /** From Retry-After on 429/503. */
  retryAfterMs?: number;
  /** Redacted, bounded; never a response body. */
  error?: string;
}

const sharedAgent = new https.Agent({ keepAlive: true, maxSockets: 64, timeout: 30_000 });

export async function sendWebhook(
  request: WebhookRequest,
  options: SendWebhookOptions = {},
): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let target: Awaited<ReturnType<typeof resolveTarget>>;
  try {
    const url = new URL(request.url);
    if (url.protocol !== 'https:') throw new SsrfError('target is not https');
    target = await resolveTarget(url, { allowHosts: options.allowHosts, lookup: options.lookup });
  } catch (error) {
    const message = error instanceof SsrfError ? error.message : 'target URL is invalid';
    return { ok: false, latencyMs: elapsed(), error: redact(`blocked: ${message}`) };
  }

  const timestampSeconds = unixSeconds((options.now ?? Date.now)());
  const headers: Record<string, string> = {
    ...signedDeliveryHeaders({
      secret: request.secret,
      eventId: request.eventId,
      body: request.body,
      timestampSeconds,
    }),
    'content-length': String(Buffer.byteLength(request.body, 'utf8')),
    'user-agent': USER_AGENT,
  };
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (result: Omit<SendResult, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve({ ...result, latencyMs: elapsed() });
    };
    const req = https.request({
      method: 'POST',
      host: target.hostname,
      port: target.port,
      path: `${target.url.pathname}`,
      headers,
      lookup: pinnedLookup(target.address, target.family),
      // SNI and certificate checks use the name, the socket uses the pinned address.
      servername: isIP(target.hostname) === 0 ? target.hostname : undefined,
      ca: options.ca,
      agent: options.agent ?? (options.ca === undefined ? sharedAgent : undefined),
    });
    const timer = setTimeout(() => {
      req.destroy(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    const onAbort = () => req.destroy(new Error('aborted: relay stopping'));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort();

    req.on('error', (error) => finish({ ok: false, error: redactError(error) }));
    req.on('response', (res) => {
      const statusCode = res.statusCode ?? 0;
      const retryAfterHeader = res.headers['retry-after'];
      // Drain a bounded amount so the socket can be reused; the body itself is never kept.
      let seen = 0;
      res.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen > MAX_RESPONSE_BYTES) res.destroy();
      });
      const done = () => {
        const result: Omit<SendResult, 'latencyMs'> = {
          ok: statusCode >= 200 && statusCode < 300,
          statusCode,
        };
        if (statusCode === 429 || statusCode === 503) {
          const retryAfterMs = parseRetryAfter(
            Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader,
          );
          if (retryAfterMs !== undefined) result.retryAfterMs = retryAfterMs;
        }
        if (statusCode >= 300 && statusCode < 400)
          result.error = `redirect not followed (${statusCode})`;
        else if (!result.ok) result.error = `receiver answered ${statusCode}`;
        finish(result);
      };
      res.on('end', done);
      res.on('close', done);
      res.on('error', done);
    });
    req.end(request.body);
  });
}
