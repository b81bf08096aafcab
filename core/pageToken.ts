import { createHmac, timingSafeEqual } from 'node:crypto';
import { DomainError } from './errors';
import { deriveKey } from './secretBox';

/**
 * L1: opaque page tokens for keyset pagination. A token is
 * `base64url(JSON {v, c})` + "." + `base64url(HMAC-SHA256(key, binding + payload))`, where the
 * binding is the workspace and a canonical form of the filter. The binding is not in the token,
 * only in the MAC: a token shown to another workspace or with another filter fails exactly like
 * a tampered one, with a typed `PageTokenError` (the API answers 400).
 */
const PURPOSE = 'quire/page-token/v1';
const VERSION = 1;
const MAX_TOKEN_LENGTH = 2048;

export class PageTokenError extends DomainError {
  override name = 'PageTokenError';
  constructor(message?: string) {
    super('invalid_page_token', message);
  }
}

export type FilterValue = string | number | boolean | null | undefined;

export interface PageTokenBinding {
  workspaceId: number;
  /** Every filter the listing applies; undefined values are dropped, key order is irrelevant. */
  filter: Record<string, FilterValue>;
  /** The listing the token belongs to, so a jobs token never pages deliveries. */
  scope?: string;
}

export type Cursor = string | number | boolean | null | Cursor[] | { [key: string]: Cursor };

function canonicalFilter(filter: Record<string, FilterValue>): string {
  const entries = Object.entries(filter)
    .filter(([, value]) => value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(entries);
}

function bindingString(binding: PageTokenBinding): string {
  if (!Number.isSafeInteger(binding.workspaceId) || binding.workspaceId <= 0) {
    throw new TypeError('workspaceId must be a positive integer');
  }
  return `${PURPOSE}|${binding.scope ?? 'default'}|${binding.workspaceId}|${canonicalFilter(binding.filter)}`;
}

function mac(secret: string, binding: PageTokenBinding, payload: string): Buffer {
  return createHmac('sha256', deriveKey(secret, PURPOSE))
    .update(`${bindingString(binding)}|${payload}`, 'utf8')
    .digest();
}

export function encodePageToken(secret: string, binding: PageTokenBinding, cursor: Cursor): string {
  const payload = Buffer.from(JSON.stringify({ v: VERSION, c: cursor }), 'utf8').toString(
    'base64url',
  );
  return `${payload}.${mac(secret, binding, payload).toString('base64url')}`;
}

export function decodePageToken<C extends Cursor = Cursor>(
  secret: string,
  binding: PageTokenBinding,
  token: string,
): C {
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) {
    throw new PageTokenError('page token is malformed');
  }
  const parts = token.split('.');
  const [payload, signature] = parts;
  if (
    parts.length !== 2 ||
    !payload ||
    !signature ||
    !/^[A-Za-z0-9_-]+$/.test(payload + signature)
  ) {
    throw new PageTokenError('page token is malformed');
  }
  const expected = mac(secret, binding, payload);
  const provided = Buffer.from(signature, 'base64url');
  if (provided.length !== expected.length || !timingSafeEqual(provided, expected)) {
    throw new PageTokenError('page token is not valid for this workspace and filter');
  }
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new PageTokenError('page token is malformed');
  }
  const body = decoded as { v?: unknown; c?: unknown };
  if (
    typeof decoded !== 'object' ||
    decoded === null ||
    body.v !== VERSION ||
    body.c === undefined
  ) {
    throw new PageTokenError('page token is malformed');
  }
  return body.c as C;
}
