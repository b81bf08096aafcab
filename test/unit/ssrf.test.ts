import { describe, expect, it } from 'vitest';
import {
  classifyAddress,
  isAllowedHost,
  parseAllowHosts,
  resolveTarget,
  SsrfError,
} from '../../net/ssrf';

const fixed =
  (...addresses: string[]) =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

async function rejection(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'accepted';
  } catch (error) {
    if (error instanceof SsrfError) return error.addressClass ?? error.message;
    throw error;
  }
}

describe('W1 SSRF address classification', () => {
  it.each([
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.9.9.9', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::', 'unspecified'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:10.0.0.1', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
  ])('W1 %s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
  ])('W1 %s is public', (address) => {
    expect(classifyAddress(address)).toBe('public');
  });
});

describe('W1 SSRF target resolution', () => {
  it('W1 rejects IP literals of private, loopback ::1, mapped ::ffff:127.0.0.1 and metadata 169.254.169.254', async () => {
    expect(await rejection(resolveTarget('https://10.0.0.5/hook'))).toBe('private');
    expect(await rejection(resolveTarget('https://[::1]/hook'))).toBe('loopback');
    expect(await rejection(resolveTarget('https://[::ffff:127.0.0.1]/hook'))).toBe('loopback');
    expect(await rejection(resolveTarget('https://169.254.169.254/latest/meta-data'))).toBe(
      'link-local',
    );
    // WHATWG URL normalises odd IPv4 spellings before we see them.
    expect(await rejection(resolveTarget('https://0x7f.1/hook'))).toBe('loopback');
    expect(await rejection(resolveTarget('https://2130706433/hook'))).toBe('loopback');
  });

  it('W1 rejects a name when any resolved address is internal', async () => {
    expect(
      await rejection(
        resolveTarget('https://hooks.example.com/x', {
          lookup: fixed('93.184.216.34', '10.0.0.1'),
        }),
      ),
    ).toBe('private');
    expect(await rejection(resolveTarget('https://localhost/x'))).toBe('loopback');
    const ok = await resolveTarget('https://hooks.example.com/x', {
      lookup: fixed('93.184.216.34'),
    });
    expect(ok.address).toBe('93.184.216.34');
    expect(ok.port).toBe(443);
  });

  it('W1 a name that does not resolve is rejected', async () => {
    const failing = async () => {
      throw new Error('ENOTFOUND');
    };
    expect(await rejection(resolveTarget('https://nope.invalid/x', { lookup: failing }))).toBe(
      'target host does not resolve',
    );
  });

  it('W1 the development allowlist admits only the listed host or host:port', async () => {
    const allow = parseAllowHosts(' localhost:8443 , receiver.test ,[::1]:9443');
    expect(isAllowedHost(allow, 'localhost', 8443)).toBe(true);
    expect(isAllowedHost(allow, 'LOCALHOST', 8443)).toBe(true);
    expect(isAllowedHost(allow, 'localhost', 8444)).toBe(false);
    expect(isAllowedHost(allow, 'receiver.test', 1)).toBe(true);
    expect(isAllowedHost(allow, '[::1]', 9443)).toBe(true);
    expect(isAllowedHost(allow, '127.0.0.1', 8443)).toBe(false);
    const pinned = await resolveTarget('https://localhost:8443/x', {
      allowHosts: allow,
      lookup: fixed('127.0.0.1'),
    });
    expect(pinned.allowlisted).toBe(true);
    expect(pinned.address).toBe('127.0.0.1');
    expect(
      await rejection(
        resolveTarget('https://localhost:8444/x', {
          allowHosts: allow,
          lookup: fixed('127.0.0.1'),
        }),
      ),
    ).toBe('loopback');
  });
});

describe('W1 target check for subscription creation', () => {
  it('W1 shape errors and forbidden addresses are typed validation errors that never echo the URL', async () => {
    const { assertWebhookTargetAllowed } = await import('../../net/ssrf');
    const { WebhookValidationError } = await import('../../core/webhookValidation');
    const publicLookup = fixed('93.184.216.34');
    await expect(
      assertWebhookTargetAllowed('https://hooks.example.com/t0ken', { lookup: publicLookup }),
    ).resolves.toBeInstanceOf(URL);
    for (const [url, code] of [
      ['http://hooks.example.com/x', 'invalid_url'],
      ['https://169.254.169.254/t0ken', 'forbidden_target'],
      ['https://[::1]/t0ken', 'forbidden_target'],
      ['https://[::ffff:127.0.0.1]/t0ken', 'forbidden_target'],
    ] as const) {
      const error = await assertWebhookTargetAllowed(url, { lookup: publicLookup }).catch((e) => e);
      expect(error, url).toBeInstanceOf(WebhookValidationError);
      expect(error.code, url).toBe(code);
      expect(error.message).not.toContain('t0ken');
    }
    const internal = await assertWebhookTargetAllowed('https://intranet.example.com/x', {
      lookup: fixed('192.168.0.10'),
    }).catch((e) => e);
    expect(internal.code).toBe('forbidden_target');
    await expect(
      assertWebhookTargetAllowed('https://localhost:8443/x', {
        lookup: fixed('127.0.0.1'),
        allowHosts: parseAllowHosts('localhost:8443'),
      }),
    ).resolves.toBeInstanceOf(URL);
  });
});
