/**
 * HTTP plumbing shared by the remote providers (Q2, Q3): one fetch with a per-call timeout
 * joined to the caller's AbortSignal, no retries of its own (Quire's workflow does the
 * retrying, so a retrying client underneath would multiply attempts and hide outages), and
 * one function, `classifyHttpOutcome`, that turns every HTTP outcome into a failure class.
 *
 * The mapping (first matching row wins):
 *
 * | outcome                                                            | class    |
 * |--------------------------------------------------------------------|----------|
 * | caller's signal aborted                                            | (the signal's reason is rethrown: cancellation, not a failure) |
 * | our timeout fired before the body was read                         | timeout  |
 * | 401                                                                 | auth     |
 * | 400/402/403/429 whose body says insufficient credit/quota/balance  | credit   |
 * | 402                                                                 | credit   |
 * | 403                                                                 | auth     |
 * | 429                                                                 | outage, retryAfterMs from `retry-after-ms` or `Retry-After` (seconds or HTTP date) |
 * | 400/422 whose body names a content filter / policy violation       | content  |
 * | 400, 404, 405, 409, 410, 413, 415, 422, other 4xx                  | invalid  |
 * | 408                                                                 | timeout  |
 * | 502, 503, 504, 529                                                  | outage (Retry-After honoured when given) |
 * | 500, 501 and any other 5xx                                          | internal |
 * | 3xx (redirects are never followed: a moved endpoint is a config error) | internal |
 * | connection refused / reset / DNS failure / socket closed           | outage   |
 * | any other transport error                                          | internal |
 * | 2xx with malformed JSON or an unexpected shape                     | internal |
 * | 2xx with a refusal (finish_reason `content_filter`, a `refusal` field, a moderation `flagged: true`) | content |
 *
 * 500 is `internal` (charged, retried with backoff) rather than `outage`: a provider's 500 is
 * as often one request it cannot handle as the provider being down, and a poison input must
 * not pause the queue for everyone. 502/503/504 come from the provider's front door and say
 * the provider itself is unavailable, so they pause the queue (refunded).
 *
 * Messages are `<provider>: <what happened> (HTTP <status>)` plus at most a short excerpt of
 * the provider's error, redacted (core/redact.ts) and scrubbed of the secrets we sent; never
 * the body verbatim.
 */
import { DEFAULT_PROVIDER_TIMEOUT_MS } from '../core/config';
import { ProviderError } from '../core/failures';
import { redact } from '../core/redact';

export const DEFAULT_TIMEOUT_MS = DEFAULT_PROVIDER_TIMEOUT_MS;
/** Bodies are read up to this size; more is a malformed answer. */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
/** A Retry-After longer than this is taken as this. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60_000;
const EXCERPT_CHARS = 160;

export interface ProviderRequest {
  /** Provider name, used in messages. */
  provider: string;
  url: string;
  method?: 'GET' | 'POST' | 'DELETE';
  headers?: Record<string, string>;
  body?: string | FormData;
  /** The caller's signal: aborting it cancels the call and rethrows its reason. */
  signal: AbortSignal;
  /** Per-call timeout covering connect, upload and reading the whole body. Default 240 s. */
  timeoutMs?: number;
  fetchImpl?: typeof fetch;
  /** Values to scrub from any excerpt (the API key we sent, for a provider that echoes it). */
  secrets?: readonly string[];
  /** Statuses that are answers, not failures, for this call (e.g. 404 on DELETE). */
  accept?: readonly number[];
  maxResponseBytes?: number;
  /** Clock for Retry-After HTTP dates. */
  now?: () => number;
}

export interface ProviderResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** Everything that can come back from one HTTP call, for `classifyHttpOutcome`. */
export type HttpOutcome =
  | { kind: 'response'; status: number; headers?: Headers; body?: string }
  | { kind: 'timeout'; timeoutMs: number }
  | { kind: 'transport'; code?: string }
  | { kind: 'malformed'; what: string; body?: string }
  | { kind: 'refusal'; what: string };

export interface ClassifyOptions {
  provider: string;
  secrets?: readonly string[];
  now?: () => number;
}

const CREDIT_TEXT =
  /insufficient[\s_-]*(credits?|quota|balance|funds)|exceeded your current quota|billing[\s_-]*hard[\s_-]*limit|credit balance is too low|out of credits?|payment[\s_-]*required/i;
const CONTENT_TEXT =
  /content[\s_-]*(filter|policy|management)|moderation|safety system|responsibleai/i;
const OUTAGE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** The one mapping from an HTTP outcome to a classified, redacted `ProviderError`. */
export function classifyHttpOutcome(outcome: HttpOutcome, options: ClassifyOptions): ProviderError {
  const p = options.provider;
  const scrub = (text: string | undefined) => safeExcerpt(text ?? '', options.secrets ?? []);
  const withExcerpt = (message: string, body?: string) => {
    const excerpt = scrub(body);
    return excerpt ? `${message}: ${excerpt}` : message;
  };
  switch (outcome.kind) {
    case 'timeout':
      return new ProviderError(
        'timeout',
        `${p}: no complete answer within ${outcome.timeoutMs} ms`,
      );
    case 'transport': {
      const code =
        outcome.code && /^[A-Z0-9_]{2,40}$/.test(outcome.code) ? outcome.code : 'unknown';
      if (outcome.code && OUTAGE_CODES.has(outcome.code)) {
        return new ProviderError('outage', `${p}: provider unreachable (${code})`);
      }
      return new ProviderError('internal', `${p}: transport error (${code})`);
    }
    case 'malformed':
      return new ProviderError('internal', `${p}: malformed answer (${outcome.what})`);
    case 'refusal':
      return new ProviderError(
        'content',
        `${p}: the provider refused the content (${outcome.what})`,
      );
    case 'response':
      break;
  }
  const { status, body } = outcome;
  const now = options.now ?? Date.now;
  const http = `(HTTP ${status})`;
  if (status === 401)
    return new ProviderError('auth', withExcerpt(`${p}: credentials rejected ${http}`, body));
  if ([400, 402, 403, 429].includes(status) && body && CREDIT_TEXT.test(body)) {
    return new ProviderError('credit', withExcerpt(`${p}: out of credit or quota ${http}`, body));
  }
  if (status === 402)
    return new ProviderError('credit', withExcerpt(`${p}: payment required ${http}`, body));
  if (status === 403)
    return new ProviderError('auth', withExcerpt(`${p}: access forbidden ${http}`, body));
  if (status === 429) {
    return new ProviderError(
      'outage',
      withExcerpt(`${p}: rate limited ${http}`, body),
      retryAfterMs(outcome.headers, now()),
    );
  }
  if ((status === 400 || status === 422) && body && CONTENT_TEXT.test(body)) {
    return new ProviderError(
      'content',
      withExcerpt(`${p}: the provider refused the content ${http}`, body),
    );
  }
  if (status === 408) return new ProviderError('timeout', `${p}: the provider timed out ${http}`);
  if (status >= 300 && status < 400) {
    return new ProviderError('internal', `${p}: unexpected redirect ${http} (check the base URL)`);
  }
  if (status >= 400 && status < 500) {
    return new ProviderError('invalid', withExcerpt(`${p}: request rejected ${http}`, body));
  }
  if ([502, 503, 504, 529].includes(status)) {
    return new ProviderError(
      'outage',
      withExcerpt(`${p}: provider unavailable ${http}`, body),
      retryAfterMs(outcome.headers, now()),
    );
  }
  if (status >= 500)
    return new ProviderError('internal', withExcerpt(`${p}: provider error ${http}`, body));
  return new ProviderError('internal', `${p}: unexpected status ${http}`);
}

/**
 * Retry-After as milliseconds: OpenAI-style `retry-after-ms` first, then `Retry-After` in
 * seconds or as an HTTP date. Undefined when absent or unreadable; capped at 24 h.
 */
export function retryAfterMs(headers: Headers | undefined, now: number): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return clampRetry(Number(ms));
  return parseRetryAfter(headers.get('retry-after'), now);
}

export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return clampRetry(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return clampRetry(at - now);
}

function clampRetry(ms: number): number {
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.round(ms)));
}

/**
 * A short, redacted excerpt of a provider's error body: the `error.message` (or `message`,
 * `detail`, `error`) of a JSON body when there is one, else the text; whitespace collapsed,
 * known secrets scrubbed, redacted, then cut. Redaction runs before cutting, so a cut never
 * leaves half a key unrecognised.
 */
export function safeExcerpt(body: string, secrets: readonly string[] = []): string {
  if (!body) return '';
  let text = body.length > 8192 ? body.slice(0, body.lastIndexOf(' ', 8192) + 1 || 8192) : body;
  try {
    const json = JSON.parse(body) as unknown;
    const message = errorMessageOf(json);
    if (message !== undefined) text = message;
  } catch {
    // not JSON: the text itself
  }
  for (const secret of secrets) {
    if (secret.length >= 4) text = text.split(secret).join('[redacted]');
  }
  text = redact(text.replace(/\s+/g, ' ').trim());
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

function errorMessageOf(json: unknown): string | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const o = json as Record<string, unknown>;
  const error = o.error;
  if (typeof error === 'object' && error !== null) {
    const e = error as Record<string, unknown>;
    if (typeof e.message === 'string') return e.message;
    if (typeof e.code === 'string') return e.code;
  }
  if (typeof error === 'string') return error;
  for (const key of ['message', 'detail']) {
    if (typeof o[key] === 'string') return o[key] as string;
  }
  return undefined;
}

/** The refusal a 2xx chat or moderation answer carries, if any (what, never the text). */
export function detectContentRefusal(json: unknown): string | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const o = json as Record<string, unknown>;
  if (o.flagged === true) return 'flagged by moderation';
  if (
    Array.isArray(o.results) &&
    o.results.some((r) => (r as { flagged?: unknown })?.flagged === true)
  ) {
    return 'flagged by moderation';
  }
  if (Array.isArray(o.choices)) {
    for (const choice of o.choices as Array<Record<string, unknown> | null>) {
      if (!choice) continue;
      if (choice.finish_reason === 'content_filter') return 'finish_reason content_filter';
      const message = choice.message as Record<string, unknown> | undefined;
      if (typeof message?.refusal === 'string' && message.refusal.trim() !== '') return 'refusal';
    }
  }
  return undefined;
}

function transportCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * One HTTP call with the per-call timeout joined to the caller's signal. Returns the answer
 * for a 2xx (or an accepted status); throws a classified `ProviderError` for anything else,
 * or the caller's abort reason when the caller cancelled.
 */
export async function providerRequest(request: ProviderRequest): Promise<ProviderResponse> {
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const classify = (outcome: HttpOutcome) =>
    classifyHttpOutcome(outcome, {
      provider: request.provider,
      secrets: request.secrets,
      now: request.now,
    });
  const { signal } = request;
  if (signal.aborted) throw signal.reason ?? new Error('aborted');
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('provider call timed out'));
  }, timeoutMs);
  const onAbort = () => controller.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const fetchImpl = request.fetchImpl ?? fetch;
    const response = await fetchImpl(request.url, {
      method: request.method ?? 'GET',
      headers: request.headers,
      body: request.body,
      signal: controller.signal,
      // Never follow: a redirect would carry our Authorization to wherever it points.
      redirect: 'manual',
    });
    const text = await readBounded(
      response,
      request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    );
    if (text === undefined) {
      throw classify({ kind: 'malformed', what: 'answer larger than allowed' });
    }
    const ok =
      (response.status >= 200 && response.status < 300) ||
      request.accept?.includes(response.status);
    if (!ok)
      throw classify({
        kind: 'response',
        status: response.status,
        headers: response.headers,
        body: text,
      });
    return { status: response.status, headers: response.headers, text };
  } catch (error) {
    if (error instanceof ProviderError) throw error;
    if (signal.aborted) throw signal.reason ?? error;
    if (timedOut) throw classify({ kind: 'timeout', timeoutMs });
    const code = transportCode(error);
    throw classify({ kind: 'transport', code });
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}

/** `providerRequest` whose 2xx answer must be JSON; a refusal in it is `content`. */
export async function providerJson(
  request: ProviderRequest,
): Promise<{ status: number; headers: Headers; json: unknown }> {
  const response = await providerRequest(request);
  let json: unknown;
  try {
    json = JSON.parse(response.text);
  } catch {
    throw classifyHttpOutcome(
      { kind: 'malformed', what: 'not JSON' },
      { provider: request.provider, secrets: request.secrets },
    );
  }
  const refusal = detectContentRefusal(json);
  if (refusal) {
    throw classifyHttpOutcome({ kind: 'refusal', what: refusal }, { provider: request.provider });
  }
  return { status: response.status, headers: response.headers, json };
}

/** A malformed-answer error for a provider whose JSON did not have the expected shape. */
export function unexpectedShape(provider: string, what: string): ProviderError {
  return classifyHttpOutcome({ kind: 'malformed', what }, { provider });
}

async function readBounded(response: Response, maxBytes: number): Promise<string | undefined> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Joins a base URL and a path without doubling or dropping slashes. */
export function joinUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}
