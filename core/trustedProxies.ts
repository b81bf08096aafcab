import { BlockList, isIP } from 'node:net';

/**
 * X4: which peers may say who the client is. A request's own socket address is the only one a
 * client cannot choose; a forwarded header (`X-Forwarded-For`) is read only when that socket
 * belongs to a proxy the installation names (QUIRE_TRUSTED_PROXIES: addresses or CIDRs,
 * comma-separated), and then from the right: the first address no trusted proxy added is the
 * client. With none named (a laptop, compose), the socket address is the client whatever the
 * header says, so a header can neither reset nor spread a sign-in limit.
 */
export interface TrustedProxies {
  readonly list: BlockList;
  readonly count: number;
}

/** `::ffff:10.0.0.1` is 10.0.0.1: a dual-stack socket reports IPv4 peers so. */
export function plainAddress(address: string): string {
  const trimmed = address.trim();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(trimmed);
  return mapped ? mapped[1]! : trimmed;
}

const family = (address: string) => (isIP(address) === 6 ? 'ipv6' : 'ipv4');

/** Parses the setting; throws naming the first entry that is neither an address nor a CIDR. */
export function parseTrustedProxies(value: string | undefined): TrustedProxies {
  const list = new BlockList();
  let count = 0;
  for (const raw of (value ?? '').split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const [address = '', prefix, extra] = entry.split('/');
    const plain = plainAddress(address);
    const version = isIP(plain);
    const bits = prefix === undefined ? undefined : Number(prefix);
    const maxBits = version === 6 ? 128 : 32;
    if (
      version === 0 ||
      extra !== undefined ||
      (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || bits! > maxBits))
    ) {
      throw new Error(`not an address or CIDR: ${JSON.stringify(entry.slice(0, 80))}`);
    }
    if (bits === undefined) list.addAddress(plain, family(plain));
    else list.addSubnet(plain, bits, family(plain));
    count += 1;
  }
  return { list, count };
}

function trusted(proxies: TrustedProxies, address: string): boolean {
  return proxies.count > 0 && isIP(address) !== 0 && proxies.list.check(address, family(address));
}

/**
 * The client's address: the socket's peer, or, when that peer is a trusted proxy, the
 * right-most address of `X-Forwarded-For` no trusted proxy wrote. An entry that is not an
 * address stops the walk there (a client wrote it) and the last trusted hop's peer is used.
 */
export function clientAddressOf(
  peer: string | undefined,
  forwardedFor: string | undefined,
  proxies: TrustedProxies,
): string {
  let client = plainAddress(peer ?? '');
  if (client === '') return 'unknown';
  if (!trusted(proxies, client) || !forwardedFor) return client;
  const hops = forwardedFor.split(',').map(plainAddress).reverse();
  for (const hop of hops) {
    if (isIP(hop) === 0) return client;
    client = hop;
    if (!trusted(proxies, hop)) return hop;
  }
  return client;
}
