import { createHmac } from 'node:crypto';

/**
 * W2 signing. One delivery carries two header sets over the same exact body:
 * - Quire's own: `X-Quire-Timestamp: <unix s>` and
 *   `X-Quire-Signature: v1=<lowercase hex HMAC-SHA256(secret, timestamp + "." + body)>`;
 * - Standard Webhooks: `webhook-id`, `webhook-timestamp` and
 *   `webhook-signature: v1,<base64 HMAC-SHA256(secret, id + "." + timestamp + "." + body)>`,
 *   so off-the-shelf verifiers work.
 * The HMAC key is the UTF-8 bytes of the subscription secret as the caller gave it. Standard
 * Webhooks libraries expect a base64 key (`whsec_...`): `standardWebhooksKey` converts.
 */

export const QUIRE_SIGNATURE_HEADER = 'x-quire-signature';
export const QUIRE_TIMESTAMP_HEADER = 'x-quire-timestamp';
export const QUIRE_EVENT_ID_HEADER = 'x-quire-event-id';
export const STANDARD_ID_HEADER = 'webhook-id';
export const STANDARD_TIMESTAMP_HEADER = 'webhook-timestamp';
export const STANDARD_SIGNATURE_HEADER = 'webhook-signature';
export const CLOUDEVENTS_CONTENT_TYPE = 'application/cloudevents+json';

function hmac(secret: string, message: string): Buffer {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(message, 'utf8').digest();
}

/** `v1=<hex>` over `timestamp + "." + body`. */
export function quireSignature(secret: string, timestampSeconds: number, body: string): string {
  return `v1=${hmac(secret, `${timestampSeconds}.${body}`).toString('hex')}`;
}

/** `v1,<base64>` over `id + "." + timestamp + "." + body` (Standard Webhooks). */
export function standardWebhooksSignature(
  secret: string,
  eventId: string,
  timestampSeconds: number,
  body: string,
): string {
  return `v1,${hmac(secret, `${eventId}.${timestampSeconds}.${body}`).toString('base64')}`;
}

/** The `whsec_` key a Standard Webhooks verifier needs to check Quire's signatures. */
export function standardWebhooksKey(secret: string): string {
  return `whsec_${Buffer.from(secret, 'utf8').toString('base64')}`;
}

export interface SignedHeadersInput {
  secret: string;
  eventId: string;
  body: string;
  /** Unix seconds; taken fresh for every attempt so a retry never replays an old signature. */
  timestampSeconds: number;
}

/** Every header of one delivery attempt except transport ones (length, user agent). */
export function signedDeliveryHeaders(input: SignedHeadersInput): Record<string, string> {
  const { secret, eventId, body, timestampSeconds } = input;
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new RangeError('timestampSeconds must be a non-negative integer');
  }
  return {
    'content-type': CLOUDEVENTS_CONTENT_TYPE,
    [QUIRE_EVENT_ID_HEADER]: eventId,
    [QUIRE_TIMESTAMP_HEADER]: String(timestampSeconds),
    [QUIRE_SIGNATURE_HEADER]: quireSignature(secret, timestampSeconds, body),
    [STANDARD_ID_HEADER]: eventId,
    [STANDARD_TIMESTAMP_HEADER]: String(timestampSeconds),
    [STANDARD_SIGNATURE_HEADER]: standardWebhooksSignature(secret, eventId, timestampSeconds, body),
  };
}

export function unixSeconds(ms: number = Date.now()): number {
  return Math.floor(ms / 1000);
}
