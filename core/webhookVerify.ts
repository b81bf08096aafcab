import { createHmac, timingSafeEqual } from 'node:crypto';
import { type CloudEvent, isCloudEvent } from './cloudevents';
import {
  QUIRE_SIGNATURE_HEADER,
  QUIRE_TIMESTAMP_HEADER,
  STANDARD_ID_HEADER,
  STANDARD_SIGNATURE_HEADER,
  STANDARD_TIMESTAMP_HEADER,
} from './webhookSignature';

/**
 * W3: the receiver's side. Recipe for an integrator's endpoint:
 *   1. Read the raw body with a size bound (`readRawBody`, or `verifyWebhookRequest` for a
 *      fetch-style `Request`); never re-serialise parsed JSON, the signature covers exact bytes.
 *   2. `verifyWebhook(rawBody, headers, { secret })`: checks the timestamp window (default
 *      5 minutes either side), then the HMAC with a constant-time compare. Either header set
 *      (`X-Quire-*` or Standard Webhooks `webhook-*`) suffices; every set present must verify.
 *   3. Record `eventId` (the outbox id) in your own store, e.g. an INSERT ... ON CONFLICT DO
 *      NOTHING, and only then return 2xx. Delivery is at-least-once: a duplicate has the same
 *      id and should be acknowledged without acting on it twice.
 *   4. Answer 2xx fast; 410 tells Quire to disable the subscription; 429/503 may carry
 *      Retry-After. Redirects are not followed.
 */

export const DEFAULT_TOLERANCE_SECONDS = 300;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export type WebhookVerificationCode =
  | 'body_too_large'
  | 'missing_signature'
  | 'invalid_timestamp'
  | 'timestamp_outside_window'
  | 'signature_mismatch'
  | 'invalid_body';

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  constructor(
    readonly code: WebhookVerificationCode,
    message: string,
  ) {
    super(message);
  }
}

export type HeaderSource =
  | { get(name: string): string | null }
  | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** The subscription secret; several during a rotation (any one may match). */
  secret: string | readonly string[];
  toleranceSeconds?: number;
  maxBodyBytes?: number;
  /** Current time in ms, for tests. */
  nowMs?: number;
}

export interface VerifiedWebhook {
  /** The outbox id as a string: deduplicate by it. */
  eventId: string;
  timestampSeconds: number;
  event: CloudEvent;
  /** Which header sets were present and verified. */
  verified: Array<'quire' | 'standard'>;
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const value = (headers as { get(name: string): string | null }).get(name);
    return value ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value.join(' ') : value;
}

function parseTimestamp(raw: string, nowMs: number, toleranceSeconds: number): number {
  if (!/^\d{1,12}$/.test(raw.trim())) {
    throw new WebhookVerificationError('invalid_timestamp', 'timestamp header is not unix seconds');
  }
  const timestamp = Number(raw.trim());
  const now = Math.floor(nowMs / 1000);
  if (Math.abs(now - timestamp) > toleranceSeconds) {
    throw new WebhookVerificationError(
      'timestamp_outside_window',
      'timestamp is outside the tolerance window',
    );
  }
  return timestamp;
}

function hmac(secret: string, message: Buffer): Buffer {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(message).digest();
}

/** Constant-time over the digest; a length mismatch reveals nothing secret. */
function sameDigest(expected: Buffer, provided: Buffer): boolean {
  return expected.length === provided.length && timingSafeEqual(expected, provided);
}

function quireCandidates(raw: string): Buffer[] {
  return raw
    .split(/[\s,]+/)
    .filter((part) => part.startsWith('v1='))
    .map((part) => part.slice(3))
    .filter((hex) => /^[0-9a-f]{64}$/.test(hex))
    .map((hex) => Buffer.from(hex, 'hex'));
}

function standardCandidates(raw: string): Buffer[] {
  return raw
    .split(/\s+/)
    .filter((part) => part.startsWith('v1,'))
    .map((part) => Buffer.from(part.slice(3), 'base64'));
}

function concat(...parts: Array<string | Buffer>): Buffer {
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
}

/**
 * Verifies one delivery and returns the parsed CloudEvent. Throws a typed
 * `WebhookVerificationError` on any problem; never returns a partially trusted result.
 */
export function verifyWebhook(
  rawBody: Uint8Array | string,
  headers: HeaderSource,
  options: VerifyWebhookOptions,
): VerifiedWebhook {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowMs = options.nowMs ?? Date.now();
  const secrets = typeof options.secret === 'string' ? [options.secret] : [...options.secret];
  if (secrets.length === 0 || secrets.some((s) => s.length === 0)) {
    throw new TypeError('verifyWebhook needs a non-empty secret');
  }
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  if (body.length > maxBodyBytes) {
    throw new WebhookVerificationError('body_too_large', `body exceeds ${maxBodyBytes} bytes`);
  }

  const quireSig = header(headers, QUIRE_SIGNATURE_HEADER);
  const quireTs = header(headers, QUIRE_TIMESTAMP_HEADER);
  const stdSig = header(headers, STANDARD_SIGNATURE_HEADER);
  const stdTs = header(headers, STANDARD_TIMESTAMP_HEADER);
  const stdId = header(headers, STANDARD_ID_HEADER);
  const hasQuire = quireSig !== undefined;
  const hasStandard = stdSig !== undefined;
  if (!hasQuire && !hasStandard) {
    throw new WebhookVerificationError('missing_signature', 'no signature header present');
  }

  const verified: Array<'quire' | 'standard'> = [];
  let timestampSeconds = 0;
  if (hasQuire) {
    if (quireTs === undefined) {
      throw new WebhookVerificationError('invalid_timestamp', 'x-quire-timestamp is missing');
    }
    timestampSeconds = parseTimestamp(quireTs, nowMs, tolerance);
    const provided = quireCandidates(quireSig);
    const message = concat(`${timestampSeconds}.`, body);
    const ok = secrets.some((secret) => {
      const expected = hmac(secret, message);
      return provided.some((candidate) => sameDigest(expected, candidate));
    });
    if (!ok)
      throw new WebhookVerificationError('signature_mismatch', 'x-quire-signature does not match');
    verified.push('quire');
  }
  if (hasStandard) {
    if (stdTs === undefined || stdId === undefined || stdId === '') {
      throw new WebhookVerificationError(
        'invalid_timestamp',
        'webhook-id or webhook-timestamp is missing',
      );
    }
    timestampSeconds = parseTimestamp(stdTs, nowMs, tolerance);
    const provided = standardCandidates(stdSig);
    const message = concat(`${stdId}.${timestampSeconds}.`, body);
    const ok = secrets.some((secret) => {
      const expected = hmac(secret, message);
      return provided.some((candidate) => sameDigest(expected, candidate));
    });
    if (!ok)
      throw new WebhookVerificationError('signature_mismatch', 'webhook-signature does not match');
    verified.push('standard');
  }

  let event: unknown;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('invalid_body', 'body is not JSON');
  }
  if (!isCloudEvent(event)) {
    throw new WebhookVerificationError('invalid_body', 'body is not a CloudEvent');
  }
  // The body's id is covered by every signature; the webhook-id header must agree with it.
  if (hasStandard && stdId !== event.id) {
    throw new WebhookVerificationError('invalid_body', 'webhook-id does not match the event id');
  }
  return { eventId: event.id, timestampSeconds, event, verified };
}

/**
 * Reads a raw body, failing as soon as it passes `maxBytes` so an oversized request is
 * never buffered whole.
 */
export async function readRawBody(
  source: AsyncIterable<Uint8Array | string> | ReadableStream<Uint8Array> | null,
  maxBytes: number = DEFAULT_MAX_BODY_BYTES,
): Promise<Buffer> {
  if (source === null) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let total = 0;
  const iterable: AsyncIterable<Uint8Array | string> =
    Symbol.asyncIterator in source
      ? (source as AsyncIterable<Uint8Array | string>)
      : readableToIterable(source as ReadableStream<Uint8Array>);
  for await (const chunk of iterable) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk);
    total += buffer.length;
    if (total > maxBytes) {
      throw new WebhookVerificationError('body_too_large', `body exceeds ${maxBytes} bytes`);
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

async function* readableToIterable(stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** The whole recipe for a fetch-style `Request` (Next.js route handlers, Deno, Bun, workers). */
export async function verifyWebhookRequest(
  request: {
    headers: { get(name: string): string | null };
    body: ReadableStream<Uint8Array> | null;
  },
  options: VerifyWebhookOptions,
): Promise<VerifiedWebhook> {
  const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const declared = Number(request.headers.get('content-length') ?? 'NaN');
  if (Number.isFinite(declared) && declared > max) {
    throw new WebhookVerificationError('body_too_large', `body exceeds ${max} bytes`);
  }
  const raw = await readRawBody(request.body, max);
  return verifyWebhook(raw, request.headers, options);
}
