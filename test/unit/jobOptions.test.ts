import { describe, expect, it } from 'vitest';
import { DomainError } from '../../core/errors';
import { checkJobRequest, checkProviderKind, SIMULATED_LIMITS } from '../../core/jobOptions';
import { billedProvider, buildSnapshot } from '../../core/pricing';
import { credentialScope, PROVIDER_CATALOGUE, pauseKey } from '../../core/providerCatalogue';

/** M2: a job's provider and options are checked against what the installation offers. */
const LOCAL = ['tesseract', 'pocketsphinx'];
const WITH_SIMULATED = ['simulated', ...LOCAL];

function refusal(run: () => void): { code: string; kind: string } | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return { code: error.code, kind: error.kind };
  }
}

describe('job options against the catalogue (M2)', () => {
  it('M2 an unknown provider and a catalogued but unconfigured one are refused with stable codes', () => {
    expect(refusal(() => checkJobRequest({ provider: 'nope' }, LOCAL))).toEqual({
      code: 'unknown_provider',
      kind: 'invalid',
    });
    expect(refusal(() => checkJobRequest({ provider: 'openai-chat' }, LOCAL))).toEqual({
      code: 'provider_not_enabled',
      kind: 'invalid',
    });
    expect(refusal(() => checkJobRequest({ provider: 'auto' }, LOCAL))).toBeUndefined();
    expect(refusal(() => checkJobRequest({ provider: 'tesseract' }, LOCAL))).toBeUndefined();
  });

  it('M2 the polish provider is checked like the provider, and must read the page kind', () => {
    const polish = (polishProvider: unknown) =>
      refusal(() => checkJobRequest({ provider: 'auto', options: { polishProvider } }, LOCAL));
    expect(polish('nope')?.code).toBe('unknown_provider');
    expect(polish('whisper')?.code).toBe('provider_not_enabled');
    expect(polish('simulated')?.code).toBe('provider_not_enabled');
    expect(polish(42)?.code).toBe('invalid_options');
    expect(polish('tesseract')).toBeUndefined();
    expect(
      refusal(() => checkProviderKind('tesseract', { polishProvider: 'whisper' }, 'image'))?.code,
    ).toBe('provider_kind_mismatch');
    expect(refusal(() => checkProviderKind('tesseract', {}, 'audio'))?.code).toBe(
      'provider_kind_mismatch',
    );
    expect(refusal(() => checkProviderKind('pocketsphinx', {}, 'audio'))).toBeUndefined();
    // Engines outside the catalogue (registered by a test) are not the catalogue's to judge.
    expect(refusal(() => checkProviderKind('polisher', {}, 'audio'))).toBeUndefined();
  });

  it('M2 simulated options are refused where the simulated engine is not enabled', () => {
    const faults = { simulated: { faults: [{ op: 'polish', category: 'credit' }] } };
    expect(refusal(() => checkJobRequest({ provider: 'auto', options: faults }, LOCAL))).toEqual({
      code: 'simulated_not_enabled',
      kind: 'invalid',
    });
    expect(
      refusal(() => checkJobRequest({ provider: 'simulated', options: {} }, LOCAL))?.code,
    ).toBe('provider_not_enabled');
    expect(
      refusal(() => checkJobRequest({ provider: 'auto', options: faults }, WITH_SIMULATED)),
    ).toBeUndefined();
  });

  it('M2 simulated latency and sizes are bounded: no job holds a worker slot for hours', () => {
    const check = (simulated: unknown) =>
      refusal(() =>
        checkJobRequest({ provider: 'simulated', options: { simulated } }, WITH_SIMULATED),
      )?.code;
    expect(check({ latencyMs: 3 * 3_600_000 })).toBe('invalid_simulated_options');
    expect(check({ audioLatencyMs: 3_600_000 })).toBe('invalid_simulated_options');
    expect(check({ lines: 2_000, latencyMs: 5_000 })).toBe('invalid_simulated_options');
    expect(check({ lines: SIMULATED_LIMITS.lines + 1 })).toBe('invalid_simulated_options');
    expect(check({ faults: [{ op: 'recognize', category: 'outage', retryAfterMs: 1e9 }] })).toBe(
      'invalid_simulated_options',
    );
    expect(check({ faults: [{ op: 'recognize', category: 'no-such-class' }] })).toBe(
      'invalid_simulated_options',
    );
    // The call log is the operator's diagnostic, never a job's to choose.
    expect(check({ callLog: '/etc/passwd' })).toBe('invalid_simulated_options');
    expect(check('fast')).toBe('invalid_simulated_options');
    expect(
      check({ lines: 30, latencyMs: 200, faults: [{ op: 'any', category: 'timeout', rate: 0.1 }] }),
    ).toBeUndefined();
  });
});

describe('credential scope and billing (M3)', () => {
  it('M3 every catalogued provider declares whose credentials it uses; shared ones pause the installation', () => {
    for (const entry of PROVIDER_CATALOGUE)
      expect(['installation', 'workspace']).toContain(entry.credentials);
    expect(credentialScope('tesseract')).toBe('installation');
    expect(credentialScope('simulated')).toBe('workspace');
    expect(credentialScope('not-catalogued')).toBe('installation');
    expect(pauseKey('tesseract', 7)).toBeNull();
    expect(pauseKey('simulated', 7)).toBe(7);
  });

  it('M3 polish is priced and billed under the polish provider, fixed at creation', () => {
    const prices = { tesseract: { call: 0 }, simulated: { call: 25 } };
    const snapshot = buildSnapshot({
      provider: 'tesseract',
      options: { polishProvider: 'simulated' },
      prices,
    });
    expect(billedProvider(snapshot, 'engine')).toEqual({
      provider: 'tesseract',
      price: { call: 0 },
    });
    expect(billedProvider(snapshot, 'polish')).toEqual({
      provider: 'simulated',
      price: { call: 25 },
    });
    const own = buildSnapshot({ provider: 'simulated', prices });
    expect(billedProvider(own, 'polish')).toEqual({ provider: 'simulated', price: { call: 25 } });
  });
});

describe('configuration (M2)', () => {
  it('M2 a default provider the configuration does not enable is refused at start', async () => {
    const { parseConfig } = await import('../../core/config');
    expect(() => parseConfig({ QUIRE_DEFAULT_PROVIDER: 'simulated' })).toThrow(
      /QUIRE_DEFAULT_PROVIDER: simulated is not enabled.*QUIRE_ENABLE_SIMULATED=1/,
    );
    expect(() => parseConfig({ QUIRE_DEFAULT_PROVIDER: 'whisper' })).toThrow(
      /QUIRE_DEFAULT_PROVIDER: whisper is not enabled/,
    );
    expect(
      parseConfig({ QUIRE_DEFAULT_PROVIDER: 'simulated', QUIRE_ENABLE_SIMULATED: '1' })
        .QUIRE_DEFAULT_PROVIDER,
    ).toBe('simulated');
    expect(parseConfig({}).QUIRE_ENABLE_SIMULATED).toBe(false);
  });
});
