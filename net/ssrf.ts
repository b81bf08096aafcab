import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { ForbiddenTargetError, validateWebhookUrl } from '../core/webhookValidation';

/**
 * W1/§12 SSRF guard for webhook (and mirror) targets. A target host is resolved and every
 * address it resolves to must be public; the address that passed is then pinned for the
 * request itself (see net/webhookSender.ts), so a DNS answer that changes between the check
 * and the connection (rebinding) cannot reach an internal address. A development allowlist
 * (`QUIRE_WEBHOOK_ALLOW_HOSTS`, comma-separated `host` or `host:port`) may admit named hosts
 * such as a local test receiver; it never applies to a host that is not listed.
 */

export type AddressClass =
  | 'public'
  | 'private'
  | 'loopback'
  | 'link-local'
  | 'unique-local'
  | 'cgnat'
  | 'multicast'
  | 'unspecified'
  | 'broadcast'
  | 'reserved';

export class SsrfError extends Error {
  override name = 'SsrfError';
  readonly code = 'forbidden_target';
  constructor(
    message: string,
    readonly addressClass?: AddressClass,
  ) {
    super(message);
  }
}

type V4 = [number, number, number, number];

function parseIPv4(text: string): V4 | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : Number.NaN));
  if (bytes.some((b) => !(b >= 0 && b <= 255))) return undefined;
  return bytes as V4;
}

/** 8 groups of 16 bits, or undefined when `text` is not an IPv6 address. */
function parseIPv6(input: string): number[] | undefined {
  let text = input;
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  if (isIP(text) !== 6) return undefined;
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    const v4 = parseIPv4(last);
    if (!v4) return undefined;
    tail = [(v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]];
    // Replace the dotted tail by two placeholder groups; the real values are set below.
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':').filter((g) => g !== '') : [];
  const restGroups = rest ? rest.split(':').filter((g) => g !== '') : [];
  const fill = 8 - headGroups.length - restGroups.length;
  const groups =
    rest === undefined
      ? headGroups
      : [...headGroups, ...new Array<string>(Math.max(0, fill)).fill('0'), ...restGroups];
  if (groups.length !== 8) return undefined;
  const numbers = groups.map((g) => Number.parseInt(g, 16));
  if (tail.length === 2) {
    numbers[6] = tail[0]!;
    numbers[7] = tail[1]!;
  }
  return numbers;
}

function classifyIPv4([a, b, c]: V4, all: V4): AddressClass {
  if (a === 0) return 'unspecified'; // 0.0.0.0/8 "this network"
  if (a === 10) return 'private';
  if (a === 100 && b >= 64 && b <= 127) return 'cgnat';
  if (a === 127) return 'loopback';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 172 && b >= 16 && b <= 31) return 'private';
  if (a === 192 && b === 0 && c === 0) return 'reserved'; // IETF protocol assignments
  if (a === 192 && b === 0 && c === 2) return 'reserved'; // TEST-NET-1
  if (a === 192 && b === 88 && c === 99) return 'reserved'; // 6to4 relay anycast
  if (a === 192 && b === 168) return 'private';
  if (a === 198 && (b === 18 || b === 19)) return 'reserved'; // benchmarking
  if (a === 198 && b === 51 && c === 100) return 'reserved'; // TEST-NET-2
  if (a === 203 && b === 0 && c === 113) return 'reserved'; // TEST-NET-3
  if (a >= 224 && a <= 239) return 'multicast';
  if (all.every((x) => x === 255)) return 'broadcast';
  if (a >= 240) return 'reserved';
  return 'public';
}

function v4From(high: number, low: number): V4 {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff];
}

function classifyIPv6(g: number[]): AddressClass {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const upperZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (upperZero && g5 === 0 && g6 === 0 && g7 === 0) return 'unspecified';
  if (upperZero && g5 === 0 && g6 === 0 && g7 === 1) return 'loopback';
  // IPv4-mapped (::ffff:a.b.c.d) and the deprecated IPv4-compatible (::a.b.c.d) forms carry
  // an IPv4 address that the socket layer may use as such: judge the embedded address.
  if (upperZero && (g5 === 0xffff || g5 === 0)) {
    const v4 = v4From(g6, g7);
    return classifyIPv4(v4, v4);
  }
  // NAT64 well-known prefix 64:ff9b::/96 and 64:ff9b:1::/48.
  if (g0 === 0x64 && g1 === 0xff9b) {
    const v4 = v4From(g6, g7);
    return classifyIPv4(v4, v4);
  }
  // 6to4 (2002::/16) embeds an IPv4 address in bits 16-47.
  if (g0 === 0x2002) {
    const v4 = v4From(g1, g2);
    return classifyIPv4(v4, v4);
  }
  if ((g0 & 0xfe00) === 0xfc00) return 'unique-local';
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local';
  if ((g0 & 0xffc0) === 0xfec0) return 'private'; // deprecated site-local
  if ((g0 & 0xff00) === 0xff00) return 'multicast';
  if (g0 === 0x2001 && g1 === 0x0db8) return 'reserved'; // documentation
  if (g0 === 0x2001 && g1 === 0) return 'reserved'; // Teredo: tunnels to arbitrary IPv4
  if (g0 === 0x0100 && g1 === 0 && g2 === 0 && g3 === 0) return 'reserved'; // discard-only
  if (g0 === 0x2001 && g1 < 0x0200) return 'reserved'; // IETF protocol assignments
  if ((g0 & 0xe000) !== 0x2000) return 'reserved'; // outside global unicast 2000::/3
  return 'public';
}

/** Classifies an IP literal (IPv4, IPv6, bracketed IPv6); throws on anything else. */
export function classifyAddress(address: string): AddressClass {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const v4 = parseIPv4(text);
  if (v4) return classifyIPv4(v4, v4);
  const v6 = parseIPv6(text);
  if (v6) return classifyIPv6(v6);
  throw new TypeError('not an IP address');
}

export interface AllowList {
  /** Lower-case host names (or IP literals) allowed on any port. */
  hosts: ReadonlySet<string>;
  /** Lower-case `host:port` pairs. */
  hostPorts: ReadonlySet<string>;
}

export const EMPTY_ALLOW_LIST: AllowList = { hosts: new Set(), hostPorts: new Set() };

/** Parses `QUIRE_WEBHOOK_ALLOW_HOSTS`: comma-separated `host` or `host:port` (IPv6 in brackets). */
export function parseAllowHosts(value: string | undefined): AllowList {
  const hosts = new Set<string>();
  const hostPorts = new Set<string>();
  for (const raw of (value ?? '').split(',')) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(entry);
    if (match) hostPorts.add(`${stripBrackets(match[1]!)}:${Number(match[2])}`);
    else hosts.add(stripBrackets(entry));
  }
  return { hosts, hostPorts };
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

export function isAllowedHost(allow: AllowList, hostname: string, port: number): boolean {
  const host = stripBrackets(hostname.toLowerCase()).replace(/\.$/, '');
  return allow.hosts.has(host) || allow.hostPorts.has(`${host}:${port}`);
}

export interface LookupAddress {
  address: string;
  family: number;
}

/** DNS resolution, injectable for tests (rebinding, fixed answers). */
export type LookupAll = (hostname: string) => Promise<LookupAddress[]>;

export const systemLookup: LookupAll = (hostname) =>
  dnsLookup(hostname, { all: true, verbatim: true });

export interface ResolvedTarget {
  url: URL;
  hostname: string;
  port: number;
  /** The address the request must connect to. */
  address: string;
  family: 4 | 6;
  allowlisted: boolean;
}

export interface ResolveTargetOptions {
  allowHosts?: AllowList;
  lookup?: LookupAll;
}

/**
 * Resolves a target URL and checks every address; returns the one address to connect to.
 * Throws `SsrfError` when any address is not public and the host is not allowlisted, or when
 * the name does not resolve. Messages name the address class, never the URL's path.
 */
export async function resolveTarget(
  target: URL | string,
  options: ResolveTargetOptions = {},
): Promise<ResolvedTarget> {
  const url = typeof target === 'string' ? new URL(target) : target;
  const hostname = stripBrackets(url.hostname.toLowerCase()).replace(/\.$/, '');
  const port = url.port === '' ? (url.protocol === 'http:' ? 80 : 443) : Number(url.port);
  const allowlisted = isAllowedHost(options.allowHosts ?? EMPTY_ALLOW_LIST, hostname, port);
  let addresses: LookupAddress[];
  if (isIP(hostname) !== 0) {
    addresses = [{ address: hostname, family: isIP(hostname) }];
  } else {
    if (hostname === '') throw new SsrfError('target has no host');
    try {
      addresses = await (options.lookup ?? systemLookup)(hostname);
    } catch {
      throw new SsrfError('target host does not resolve');
    }
  }
  if (addresses.length === 0) throw new SsrfError('target host does not resolve');
  if (!allowlisted) {
    for (const { address } of addresses) {
      let kind: AddressClass;
      try {
        kind = classifyAddress(address);
      } catch {
        throw new SsrfError('target resolved to an unreadable address');
      }
      if (kind !== 'public') {
        throw new SsrfError(`target resolves to a ${kind} address`, kind);
      }
    }
  }
  const chosen = addresses[0]!;
  return {
    url,
    hostname,
    port,
    address: chosen.address,
    family: chosen.family === 6 ? 6 : 4,
    allowlisted,
  };
}

/**
 * W1 in full for a route handler creating a subscription: the URL's shape (core rules), then
 * DNS resolution with every address checked. Throws `WebhookValidationError` with code
 * `invalid_url` or `forbidden_target` (both a 422 for the API); the message never echoes the
 * URL. The check is repeated before every send, so a later DNS change cannot slip through.
 * `allowHosts` is the caller's parsed QUIRE_WEBHOOK_ALLOW_HOSTS setting; default none.
 */
export async function assertWebhookTargetAllowed(
  rawUrl: unknown,
  options: ResolveTargetOptions = {},
): Promise<URL> {
  const url = validateWebhookUrl(rawUrl);
  try {
    await resolveTarget(url, options);
  } catch (error) {
    if (error instanceof SsrfError) throw new ForbiddenTargetError(error.message);
    throw error;
  }
  return url;
}

/**
 * A `lookup` that answers with the one address the SSRF check approved, so the socket
 * connects where the check looked and DNS cannot be re-asked (rebinding).
 */
export function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return ((
    _hostname: string,
    options: { all?: boolean },
    callback: (...args: unknown[]) => void,
  ) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}
