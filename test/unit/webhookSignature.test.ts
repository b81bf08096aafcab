import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { cloudEventBody, toCloudEvent } from '../../core/cloudevents';
import {
  quireSignature,
  signedDeliveryHeaders,
  standardWebhooksKey,
  standardWebhooksSignature,
} from '../../core/webhookSignature';
import { verifyWebhook, WebhookVerificationError } from '../../core/webhookVerify';

const secret = 'whsec-test-0123456789abcdef0123456789abcdef';
const event = {
  id: 42,
  workspaceId: 7,
  type: 'dev.quire.transcription.completed',
  subject: 'transcription-jobs/abc',
  data: { pageId: 3, revision: 2, note: 'ünïcødé' },
  createdAt: new Date('2025-01-02T03:04:05.000Z'),
};

describe('W2 signatures', () => {
  it('W2 X-Quire-Signature matches a hand-computed lowercase hex HMAC of timestamp.body', () => {
    const body = '{"a":1}';
    const expected = createHmac('sha256', secret).update(`1700000000.${body}`).digest('hex');
    expect(quireSignature(secret, 1700000000, body)).toBe(`v1=${expected}`);
    expect(expected).toMatch(/^[0-9a-f]{64}$/);
  });

  it('W2 webhook-signature matches a hand-computed base64 HMAC of id.timestamp.body', () => {
    const body = '{"a":1}';
    const expected = createHmac('sha256', secret).update(`42.1700000000.${body}`).digest('base64');
    expect(standardWebhooksSignature(secret, '42', 1700000000, body)).toBe(`v1,${expected}`);
  });

  it('W2 a delivery carries both header sets and verifies with the standardwebhooks npm verifier', () => {
    const body = cloudEventBody(event);
    const timestampSeconds = Math.floor(Date.now() / 1000);
    const headers = signedDeliveryHeaders({ secret, eventId: '42', body, timestampSeconds });
    expect(headers['content-type']).toBe('application/cloudevents+json');
    expect(headers['webhook-id']).toBe('42');
    expect(headers['webhook-timestamp']).toBe(String(timestampSeconds));
    expect(headers['x-quire-timestamp']).toBe(String(timestampSeconds));
    const verified = new Webhook(standardWebhooksKey(secret)).verify(body, headers);
    expect(verified).toEqual(JSON.parse(body));
    // The verifier rejects the same headers with another key: the check is real.
    expect(() => new Webhook(standardWebhooksKey(`${secret}x`)).verify(body, headers)).toThrow();
  });

  it('W2 every retry re-signs with a fresh timestamp', () => {
    const body = cloudEventBody(event);
    const first = signedDeliveryHeaders({
      secret,
      eventId: '42',
      body,
      timestampSeconds: 1700000000,
    });
    const retry = signedDeliveryHeaders({
      secret,
      eventId: '42',
      body,
      timestampSeconds: 1700000005,
    });
    expect(retry['x-quire-signature']).not.toBe(first['x-quire-signature']);
    expect(retry['webhook-signature']).not.toBe(first['webhook-signature']);
    expect(retry['webhook-id']).toBe(first['webhook-id']);
  });

  it('E1 CloudEvent: id is the outbox id, source names the workspace, body is structured JSON', () => {
    const ce = toCloudEvent(event);
    expect(ce).toEqual({
      specversion: '1.0',
      id: '42',
      source: '/quire/workspaces/7',
      type: 'dev.quire.transcription.completed',
      subject: 'transcription-jobs/abc',
      time: '2025-01-02T03:04:05.000Z',
      datacontenttype: 'application/json',
      data: event.data,
    });
    expect(JSON.parse(cloudEventBody(event))).toEqual(ce);
    expect(toCloudEvent({ ...event, subject: null })).not.toHaveProperty('subject');
  });
});

describe('W3 receiver verification helper', () => {
  const nowMs = 1_700_000_100_000;
  const body = cloudEventBody(event);
  const signed = (overrides: { ts?: number; secret?: string } = {}) =>
    signedDeliveryHeaders({
      secret: overrides.secret ?? secret,
      eventId: '42',
      body,
      timestampSeconds: overrides.ts ?? 1_700_000_100,
    });
  const code = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      if (error instanceof WebhookVerificationError) return error.code;
      throw error;
    }
    return 'accepted';
  };

  it('W3 accepts a genuine delivery with both header sets and returns the event id', () => {
    const result = verifyWebhook(body, signed(), { secret, nowMs });
    expect(result.eventId).toBe('42');
    expect(result.verified).toEqual(['quire', 'standard']);
    expect(result.event.type).toBe('dev.quire.transcription.completed');
  });

  it('W3 accepts either header set alone', () => {
    const all = signed();
    const quireOnly = {
      'x-quire-timestamp': all['x-quire-timestamp'],
      'x-quire-signature': all['x-quire-signature'],
    };
    const standardOnly: Record<string, string> = {
      'webhook-id': all['webhook-id']!,
      'webhook-timestamp': all['webhook-timestamp']!,
      'webhook-signature': all['webhook-signature']!,
    };
    expect(verifyWebhook(body, quireOnly, { secret, nowMs }).verified).toEqual(['quire']);
    expect(verifyWebhook(body, new Headers(standardOnly), { secret, nowMs }).verified).toEqual([
      'standard',
    ]);
  });

  it('W3 rejects a tampered body', () => {
    const tampered = body.replace('"revision":2', '"revision":3');
    expect(tampered).not.toBe(body);
    expect(code(() => verifyWebhook(tampered, signed(), { secret, nowMs }))).toBe(
      'signature_mismatch',
    );
  });

  it('W3 rejects a stale or future timestamp', () => {
    expect(
      code(() => verifyWebhook(body, signed({ ts: 1_700_000_100 - 301 }), { secret, nowMs })),
    ).toBe('timestamp_outside_window');
    expect(
      code(() => verifyWebhook(body, signed({ ts: 1_700_000_100 + 301 }), { secret, nowMs })),
    ).toBe('timestamp_outside_window');
    expect(
      code(() => verifyWebhook(body, signed({ ts: 1_700_000_100 - 299 }), { secret, nowMs })),
    ).toBe('accepted');
  });

  it('W3 rejects the wrong secret', () => {
    expect(
      code(() => verifyWebhook(body, signed({ secret: `${secret}-other` }), { secret, nowMs })),
    ).toBe('signature_mismatch');
    // During a rotation either secret may match.
    expect(
      code(() =>
        verifyWebhook(body, signed({ secret: `${secret}-new` }), {
          secret: [secret, `${secret}-new`],
          nowMs,
        }),
      ),
    ).toBe('accepted');
  });

  it('W3 rejects an oversized body', () => {
    expect(
      code(() => verifyWebhook(body, signed(), { secret, nowMs, maxBodyBytes: body.length - 1 })),
    ).toBe('body_too_large');
  });

  it('W3 rejects missing headers, a forged header set beside a genuine one, and a swapped webhook-id', () => {
    expect(code(() => verifyWebhook(body, {}, { secret, nowMs }))).toBe('missing_signature');
    const forged = { ...signed(), 'webhook-signature': 'v1,AAAA' };
    expect(code(() => verifyWebhook(body, forged, { secret, nowMs }))).toBe('signature_mismatch');
    const quireOnlyWithOtherId = {
      ...signed(),
      'webhook-signature': undefined,
      'webhook-id': '41',
    };
    expect(code(() => verifyWebhook(body, quireOnlyWithOtherId, { secret, nowMs }))).toBe(
      'accepted',
    );
    const headers41 = signedDeliveryHeaders({
      secret,
      eventId: '41',
      body,
      timestampSeconds: 1_700_000_100,
    });
    expect(code(() => verifyWebhook(body, headers41, { secret, nowMs }))).toBe('invalid_body');
  });
});
