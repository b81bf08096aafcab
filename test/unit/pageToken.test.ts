import { describe, expect, it } from 'vitest';
import { decodePageToken, encodePageToken, PageTokenError } from '../../core/pageToken';

const key = 'k'.repeat(48);
const binding = { workspaceId: 1, filter: { status: 'running', pageId: undefined } };
const cursor = { id: '01890f6e-7a2b-7c3d-8e4f-0123456789ab' };

function expectRejected(fn: () => unknown) {
  expect(fn).toThrow(PageTokenError);
  try {
    fn();
  } catch (error) {
    expect((error as PageTokenError).code).toBe('invalid_page_token');
  }
}

describe('L1 signed page tokens', () => {
  it('L1 a token round-trips for the same workspace and filter, whatever the key order', () => {
    const token = encodePageToken(key, binding, cursor);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(
      decodePageToken(
        key,
        { workspaceId: 1, filter: { pageId: undefined, status: 'running' } },
        token,
      ),
    ).toEqual(cursor);
  });

  it('L1 a tampered token is rejected', () => {
    const token = encodePageToken(key, binding, cursor);
    const [payload, mac] = token.split('.') as [string, string];
    const forgedPayload = Buffer.from(JSON.stringify({ v: 1, c: { id: 'zzzz' } })).toString(
      'base64url',
    );
    expectRejected(() => decodePageToken(key, binding, `${forgedPayload}.${mac}`));
    const flipped = mac.startsWith('A') ? `B${mac.slice(1)}` : `A${mac.slice(1)}`;
    expectRejected(() => decodePageToken(key, binding, `${payload}.${flipped}`));
    expectRejected(() => decodePageToken(key, binding, `${payload}.`));
    expectRejected(() => decodePageToken(key, binding, 'not a token'));
    expectRejected(() => decodePageToken(key, binding, ''));
    expectRejected(() => decodePageToken(key, binding, `${token}.extra`));
  });

  it('L1 a token from another workspace is rejected', () => {
    const token = encodePageToken(key, binding, cursor);
    expectRejected(() => decodePageToken(key, { ...binding, workspaceId: 2 }, token));
  });

  it('L1 a token reused with another filter is rejected', () => {
    const token = encodePageToken(key, binding, cursor);
    expectRejected(() =>
      decodePageToken(key, { workspaceId: 1, filter: { status: 'failed' } }, token),
    );
    expectRejected(() =>
      decodePageToken(key, { workspaceId: 1, filter: { status: 'running', pageId: 5 } }, token),
    );
    expectRejected(() => decodePageToken(key, { workspaceId: 1, filter: {} }, token));
    expectRejected(() => decodePageToken(key, { ...binding, scope: 'deliveries' }, token));
  });

  it('L1 a token signed with another key is rejected', () => {
    const token = encodePageToken(key, binding, cursor);
    expectRejected(() => decodePageToken('o'.repeat(48), binding, token));
  });
});
