import { describe, expect, it } from 'vitest';
import {
  assertSubscriptionCapacity,
  validateEventTypes,
  validateWebhookSecret,
  validateWebhookUrl,
  WebhookValidationError,
} from '../../core/webhookValidation';

function codeOf(fn: () => unknown): string {
  try {
    fn();
    return 'ok';
  } catch (error) {
    if (error instanceof WebhookValidationError) return error.code;
    throw error;
  }
}

describe('W1 webhook target and secret rules', () => {
  it('W1 accepts an absolute https URL with a path and port', () => {
    expect(validateWebhookUrl('https://hooks.example.com/quire').hostname).toBe(
      'hooks.example.com',
    );
    expect(codeOf(() => validateWebhookUrl('https://hooks.example.com:8443/a/b'))).toBe('ok');
  });

  it('W1 rejects non-https, relative, credentials, query and fragment (even empty ones)', () => {
    for (const bad of [
      'http://hooks.example.com/x',
      'ftp://hooks.example.com/x',
      '//hooks.example.com/x',
      '/x',
      'hooks.example.com',
      'https://user:pass@hooks.example.com/x',
      'https://user@hooks.example.com/x',
      'https://@hooks.example.com/x',
      'https://hooks.example.com/x?a=1',
      'https://hooks.example.com/x?',
      'https://hooks.example.com/x#frag',
      'https://hooks.example.com/x#',
      ' https://hooks.example.com/x',
      'https://hooks.example.com/x y',
      'https://',
      '',
      `https://example.com/${'a'.repeat(2100)}`,
    ]) {
      expect(
        codeOf(() => validateWebhookUrl(bad)),
        bad,
      ).toBe('invalid_url');
    }
    expect(codeOf(() => validateWebhookUrl(42))).toBe('invalid_url');
  });

  it('W1 error messages never echo the URL', () => {
    try {
      validateWebhookUrl('https://hooks.example.com/secret-path-token?x=1');
    } catch (error) {
      expect((error as Error).message).not.toContain('secret-path-token');
    }
  });

  it('W1 secret is 32-1024 bytes with no surrounding whitespace', () => {
    expect(codeOf(() => validateWebhookSecret('a'.repeat(32)))).toBe('ok');
    expect(codeOf(() => validateWebhookSecret('a'.repeat(1024)))).toBe('ok');
    expect(codeOf(() => validateWebhookSecret('a'.repeat(31)))).toBe('invalid_secret');
    expect(codeOf(() => validateWebhookSecret('a'.repeat(1025)))).toBe('invalid_secret');
    // Bytes, not characters: 16 two-byte characters are 32 bytes.
    expect(codeOf(() => validateWebhookSecret('é'.repeat(16)))).toBe('ok');
    expect(codeOf(() => validateWebhookSecret('é'.repeat(513)))).toBe('invalid_secret');
    expect(codeOf(() => validateWebhookSecret(` ${'a'.repeat(40)}`))).toBe('invalid_secret');
    expect(codeOf(() => validateWebhookSecret(`${'a'.repeat(40)}\n`))).toBe('invalid_secret');
    expect(codeOf(() => validateWebhookSecret(`${'a'.repeat(20)} ${'b'.repeat(20)}`))).toBe('ok');
    expect(codeOf(() => validateWebhookSecret(undefined))).toBe('invalid_secret');
  });

  it('W1 at most 100 subscriptions per workspace', () => {
    expect(codeOf(() => assertSubscriptionCapacity(99))).toBe('ok');
    expect(codeOf(() => assertSubscriptionCapacity(100))).toBe('too_many_subscriptions');
  });

  it('W1 event type filters name known E1 types', () => {
    expect(validateEventTypes(undefined)).toBeNull();
    expect(validateEventTypes(['dev.quire.transcription.completed'])).toEqual([
      'dev.quire.transcription.completed',
    ]);
    expect(codeOf(() => validateEventTypes(['dev.quire.nope']))).toBe('invalid_event_types');
    expect(codeOf(() => validateEventTypes([]))).toBe('invalid_event_types');
  });
});
