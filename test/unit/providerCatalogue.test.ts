import { describe, expect, it } from 'vitest';
import { parseConfig, QUIRE_SETTING_NAMES } from '../../core/config';
import { buildSnapshot, DEFAULT_PRICES, pricesWith } from '../../core/pricing';
import {
  AUTO_PROVIDER,
  describeProvider,
  enabledProviders,
  KNOWN_PROVIDERS,
  PROVIDER_CATALOGUE,
  resolveProvider,
} from '../../core/providerCatalogue';
import { createEngines } from '../../providers/catalogue';

/** One catalogue says which providers exist, what they read, cost and need. */
const REMOTE_SETTINGS = {
  QUIRE_OPENAI_BASE_URL: 'http://127.0.0.1:9',
  QUIRE_WHISPER_BASE_URL: 'http://127.0.0.1:9',
  QUIRE_ASYNC_SPEECH_BASE_URL: 'https://speech.example.com/api',
};

describe('provider catalogue (Q1, Q2, B1)', () => {
  it('Q1 names every provider a job may ask for, once', () => {
    expect(KNOWN_PROVIDERS).toEqual([
      'simulated',
      'tesseract',
      'pocketsphinx',
      'openai-chat',
      'whisper',
      'async-speech',
    ]);
    expect(new Set(KNOWN_PROVIDERS).size).toBe(KNOWN_PROVIDERS.length);
    for (const name of KNOWN_PROVIDERS) expect(describeProvider(name)?.name).toBe(name);
    expect(describeProvider('no-such-engine')).toBeUndefined();
  });

  it('Q1 says which media each provider reads', () => {
    const kinds = Object.fromEntries(PROVIDER_CATALOGUE.map((e) => [e.name, e.kinds]));
    expect(kinds).toEqual({
      simulated: ['image', 'audio'],
      tesseract: ['image'],
      pocketsphinx: ['audio'],
      'openai-chat': ['image'],
      whisper: ['audio'],
      'async-speech': ['audio'],
    });
  });

  it('Q2 auto picks the offline engine for the kind, and the engine reads that kind', () => {
    expect(resolveProvider(AUTO_PROVIDER, 'image')).toBe('tesseract');
    expect(resolveProvider(AUTO_PROVIDER, 'audio')).toBe('pocketsphinx');
    expect(resolveProvider('whisper', 'image')).toBe('whisper');
    for (const kind of ['image', 'audio'] as const) {
      const engine = describeProvider(resolveProvider(AUTO_PROVIDER, kind))!;
      expect(engine.kinds).toContain(kind);
      expect(engine.location).toBe('local');
    }
  });

  it('Q2 M2 the offline engines are always enabled; simulated only with QUIRE_ENABLE_SIMULATED=1; a remote one when its base URL is set', () => {
    const names = (env: Record<string, string>) =>
      enabledProviders(parseConfig(env)).map((e) => e.name);
    expect(names({})).toEqual(['tesseract', 'pocketsphinx']);
    expect(names({ QUIRE_ENABLE_SIMULATED: '0' })).toEqual(['tesseract', 'pocketsphinx']);
    expect(names({ QUIRE_ENABLE_SIMULATED: '1' })).toEqual([
      'simulated',
      'tesseract',
      'pocketsphinx',
    ]);
    expect(() => parseConfig({ QUIRE_ENABLE_SIMULATED: 'yes please' })).toThrow(
      /QUIRE_ENABLE_SIMULATED/,
    );
    // An API key alone does not enable anything.
    expect(names({ QUIRE_OPENAI_API_KEY: 'sk-x', QUIRE_WHISPER_MODEL: 'm' })).toEqual([
      'tesseract',
      'pocketsphinx',
    ]);
    expect(names({ QUIRE_WHISPER_BASE_URL: 'http://127.0.0.1:9' })).toContain('whisper');
    expect(names({ ...REMOTE_SETTINGS, QUIRE_ENABLE_SIMULATED: '1' })).toEqual(KNOWN_PROVIDERS);
    for (const entry of PROVIDER_CATALOGUE) {
      if (entry.enabledBy) expect(entry.settings).toContain(entry.enabledBy);
    }
  });

  it('Q2 every setting the catalogue names is a configuration key', () => {
    // PATH is read for finding engines, not passed around as a setting.
    const keys = [...QUIRE_SETTING_NAMES, 'PATH'];
    for (const entry of PROVIDER_CATALOGUE) {
      for (const setting of entry.settings) expect(keys).toContain(setting);
    }
  });

  it('Q2 a worker registers exactly the enabled engines, by their catalogue names', () => {
    for (const env of [{}, REMOTE_SETTINGS, { QUIRE_ENABLE_SIMULATED: '1' }]) {
      const config = parseConfig(env);
      expect(createEngines(config).map((p) => p.name)).toEqual(
        enabledProviders(config).map((e) => e.name),
      );
    }
  });

  it('B1 default prices come from the catalogue; QUIRE_PRICES merges over them', () => {
    for (const entry of PROVIDER_CATALOGUE) expect(DEFAULT_PRICES[entry.name]).toBe(entry.prices);
    expect(pricesWith(undefined)).toBe(DEFAULT_PRICES);
    const { QUIRE_PRICES } = parseConfig({
      QUIRE_PRICES: JSON.stringify({ simulated: { line: 7 }, custom: { call: 1 } }),
    });
    const merged = pricesWith(QUIRE_PRICES);
    expect(merged.simulated).toEqual({ line: 7, page: 500, audio_second: 200, call: 0 });
    expect(merged.custom).toEqual({ call: 1 });
    expect(merged.whisper).toEqual(describeProvider('whisper')!.prices);
    // The catalogue's own defaults are never mutated by a merge.
    expect(describeProvider('simulated')!.prices.line).toBe(100);
    expect(buildSnapshot({ provider: 'simulated', prices: merged }).price.line).toBe(7);
    expect(buildSnapshot({ provider: 'tesseract' }).price).toEqual({ line: 0, page: 0, call: 0 });
  });
});
