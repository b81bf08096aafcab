import 'server-only';
import { CLIENT_ADDRESS_HEADER } from './edgeGuard';

/**
 * R2, X4: the address a sign-in attempt is counted against: the one the process's edge guard
 * resolved from the connection and the trusted proxies (web/lib/edgeGuard.ts), never a
 * header the client wrote. Unknown when absent (a route called in process).
 */
export function clientAddress(headers: Headers): string {
  const address = headers.get(CLIENT_ADDRESS_HEADER)?.trim();
  return address && address.length <= 100 ? address : 'unknown';
}
