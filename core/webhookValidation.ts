import { isQuireEventType } from './cloudevents';
import { DomainError } from './errors';

/**
 * W1, the pure part: the shape of a target URL and of a secret. Whether the host resolves to
 * a forbidden address is checked in net/ssrf.ts, at creation and again before every send.
 */
export const MAX_SUBSCRIPTIONS_PER_WORKSPACE = 100;
export const SECRET_MIN_BYTES = 32;
export const SECRET_MAX_BYTES = 1024;
export const MAX_URL_LENGTH = 2048;

export type WebhookValidationCode =
  | 'invalid_url'
  | 'invalid_secret'
  | 'invalid_event_types'
  | 'too_many_subscriptions'
  | 'forbidden_target';

export class WebhookValidationError extends DomainError {
  override name = 'WebhookValidationError';
  constructor(
    override readonly code: WebhookValidationCode,
    message: string,
    readonly field: 'url' | 'secret' | 'eventTypes' | 'workspace',
  ) {
    super(code, message);
  }
}

/** The URL's host resolves where a webhook may not go (net/ssrf.ts decides, with `reason`). */
export class ForbiddenTargetError extends WebhookValidationError {
  override name = 'ForbiddenTargetError';
  constructor(readonly reason: string) {
    super('forbidden_target', `url ${reason}`, 'url');
  }
}

function hasWhitespaceOrControl(text: string): boolean {
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (code <= 0x20 || code === 0x7f || /\s/.test(char)) return true;
  }
  return false;
}

/** Returns the parsed URL or throws; the message never echoes the URL (it may hold a token). */
export function validateWebhookUrl(raw: unknown): URL {
  const fail = (why: string) => new WebhookValidationError('invalid_url', `url ${why}`, 'url');
  if (typeof raw !== 'string' || raw.length === 0) throw fail('must be a non-empty string');
  if (raw.length > MAX_URL_LENGTH) throw fail(`must be at most ${MAX_URL_LENGTH} characters`);
  if (hasWhitespaceOrControl(raw)) throw fail('must not contain whitespace or control characters');
  // Checked on the raw text: the URL parser drops an empty "?" or "#" silently.
  if (raw.includes('?')) throw fail('must not have a query');
  if (raw.includes('#')) throw fail('must not have a fragment');
  if (!/^https:\/\//i.test(raw)) throw fail('must be an absolute https URL');
  const authority = raw.slice('https://'.length).split('/')[0] ?? '';
  if (authority.includes('@')) throw fail('must not carry credentials');
  if (authority.includes('\\')) throw fail('is malformed');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw fail('is malformed');
  }
  if (url.protocol !== 'https:') throw fail('must be an absolute https URL');
  if (url.username !== '' || url.password !== '') throw fail('must not carry credentials');
  if (url.hostname === '') throw fail('must name a host');
  return url;
}

export function validateWebhookSecret(secret: unknown): string {
  const fail = (why: string) =>
    new WebhookValidationError('invalid_secret', `secret ${why}`, 'secret');
  if (typeof secret !== 'string') throw fail('must be a string');
  const bytes = Buffer.byteLength(secret, 'utf8');
  if (bytes < SECRET_MIN_BYTES || bytes > SECRET_MAX_BYTES) {
    throw fail(`must be ${SECRET_MIN_BYTES}-${SECRET_MAX_BYTES} bytes`);
  }
  if (secret.trim() !== secret) throw fail('must not have surrounding whitespace');
  return secret;
}

/** Optional type filter: null means every event type. */
export function validateEventTypes(types: unknown): string[] | null {
  if (types === undefined || types === null) return null;
  const fail = (why: string) =>
    new WebhookValidationError('invalid_event_types', `eventTypes ${why}`, 'eventTypes');
  if (!Array.isArray(types) || types.length === 0) throw fail('must be a non-empty array');
  if (types.length > 50) throw fail('must list at most 50 types');
  for (const type of types) {
    if (typeof type !== 'string' || !isQuireEventType(type))
      throw fail('lists an unknown event type');
  }
  return [...new Set(types as string[])];
}

export function assertSubscriptionCapacity(existing: number): void {
  if (existing >= MAX_SUBSCRIPTIONS_PER_WORKSPACE) {
    throw new WebhookValidationError(
      'too_many_subscriptions',
      `a workspace has at most ${MAX_SUBSCRIPTIONS_PER_WORKSPACE} webhook subscriptions`,
      'workspace',
    );
  }
}
