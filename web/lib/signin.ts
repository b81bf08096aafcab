import 'server-only';

/**
 * R2: the address a sign-in attempt is counted against. `next start` sets X-Forwarded-For
 * from the connection when the request has none; behind a proxy the last entry is the one the
 * proxy nearest to Quire saw, which a client cannot choose. Unknown when absent.
 */
export function clientAddress(headers: Headers): string {
  const forwarded = headers.get('x-forwarded-for');
  const last = forwarded?.split(',').pop()?.trim();
  return last && last.length <= 100 ? last : 'unknown';
}
