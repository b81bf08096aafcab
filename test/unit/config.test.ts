import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../core/config';

describe('configuration (O1)', () => {
  it('runs on laptop defaults', () => {
    const config = parseConfig({}, { cores: 2 });
    expect(config.QUIRE_ENGINE_THREADS).toBe(2);
    expect(config.WORKER_CONCURRENCY).toBe(4);
    expect(config.QUIRE_TESSERACT_ENGINE).toBe('auto');
    expect(config.QUIRE_TASK_QUEUE).toBe('quire-transcription');
    expect(config.QUIRE_MAX_ATTEMPTS).toBe(5);
    expect(config.QUIRE_POLISH_ATTEMPTS).toBe(3);
    expect(config.QUIRE_SECRET_KEYS).toEqual([]);
  });

  it('P2 engine threads default to the cores and the worker concurrency feeds them', () => {
    expect(parseConfig({}, { cores: 1 })).toMatchObject({
      QUIRE_ENGINE_THREADS: 1,
      WORKER_CONCURRENCY: 2,
    });
    expect(parseConfig({}, { cores: 12 })).toMatchObject({
      QUIRE_ENGINE_THREADS: 12,
      WORKER_CONCURRENCY: 16,
    });
    expect(parseConfig({ QUIRE_ENGINE_THREADS: '3' }, { cores: 2 }).WORKER_CONCURRENCY).toBe(6);
    expect(
      parseConfig({ QUIRE_ENGINE_THREADS: '3', WORKER_CONCURRENCY: '3' }).WORKER_CONCURRENCY,
    ).toBe(3);
    expect(() => parseConfig({ QUIRE_ENGINE_THREADS: '0' })).toThrow(/QUIRE_ENGINE_THREADS/);
    expect(() => parseConfig({ QUIRE_TESSERACT_ENGINE: 'gpu' })).toThrow(/QUIRE_TESSERACT_ENGINE/);
  });

  it('O1 rejects WORKER_CONCURRENCY outside 1-16 with a clear message', () => {
    expect(() => parseConfig({ WORKER_CONCURRENCY: '17' })).toThrow(ConfigError);
    expect(() => parseConfig({ WORKER_CONCURRENCY: '0' })).toThrow(/WORKER_CONCURRENCY/);
    expect(parseConfig({ WORKER_CONCURRENCY: '16' }).WORKER_CONCURRENCY).toBe(16);
  });

  it('D14 the installation pace of bulk jobs is unset by default (blank too), a count from 1 when set', () => {
    expect(parseConfig({}).QUIRE_FLEET_MAX_OPEN_WORKFLOWS).toBeUndefined();
    expect(
      parseConfig({ QUIRE_FLEET_MAX_OPEN_WORKFLOWS: '' }).QUIRE_FLEET_MAX_OPEN_WORKFLOWS,
    ).toBeUndefined();
    expect(
      parseConfig({ QUIRE_FLEET_MAX_OPEN_WORKFLOWS: '5000' }).QUIRE_FLEET_MAX_OPEN_WORKFLOWS,
    ).toBe(5000);
    expect(() => parseConfig({ QUIRE_FLEET_MAX_OPEN_WORKFLOWS: '0' })).toThrow(ConfigError);
    expect(() => parseConfig({ QUIRE_FLEET_MAX_OPEN_WORKFLOWS: '0' })).toThrow(
      /QUIRE_FLEET_MAX_OPEN_WORKFLOWS/,
    );
  });

  it('requires a real secret in production', () => {
    expect(() => parseConfig({ NODE_ENV: 'production' })).toThrow(/QUIRE_SECRET_KEY/);
    const config = parseConfig({ NODE_ENV: 'production', QUIRE_SECRET_KEY: 'x'.repeat(40) });
    expect(config.QUIRE_SECRET_KEY).toBe('x'.repeat(40));
  });

  it('engine settings default to what the engines used before', () => {
    const config = parseConfig({});
    expect(config.QUIRE_PROVIDER_TIMEOUT_MS).toBe(240_000);
    expect(config.QUIRE_OPENAI_MODEL).toBe('gpt-4o-mini');
    expect(config.QUIRE_WHISPER_MODEL).toBe('whisper-1');
    expect(config.QUIRE_ASYNC_SPEECH_MODEL).toBeUndefined();
    expect(config.QUIRE_OPENAI_BASE_URL).toBeUndefined();
    expect(config.QUIRE_WHISPER_BASE_URL).toBeUndefined();
    expect(config.QUIRE_ASYNC_SPEECH_BASE_URL).toBeUndefined();
    expect(config.QUIRE_TESSDATA_DIR).toBeUndefined();
    expect(config.QUIRE_POCKETSPHINX_DIR).toBeUndefined();
    expect(config.PATH).toBe('/usr/local/bin:/usr/bin:/bin');
  });

  it('Q2 engine settings are trimmed, blank is unset, base URLs lose trailing slashes', () => {
    const config = parseConfig({
      QUIRE_OPENAI_BASE_URL: ' https://llm.example.com/ ',
      QUIRE_OPENAI_MODEL: '   ',
      QUIRE_WHISPER_API_KEY: '  ',
      QUIRE_PROVIDER_TIMEOUT_MS: ' 250 ',
    });
    expect(config.QUIRE_OPENAI_BASE_URL).toBe('https://llm.example.com');
    expect(config.QUIRE_OPENAI_MODEL).toBe('gpt-4o-mini');
    expect(config.QUIRE_WHISPER_API_KEY).toBeUndefined();
    expect(config.QUIRE_PROVIDER_TIMEOUT_MS).toBe(250);
  });

  it('Q2 rejects bad engine settings, naming the key and never the value', () => {
    for (const env of [
      { QUIRE_PROVIDER_TIMEOUT_MS: '1e3' },
      { QUIRE_PROVIDER_TIMEOUT_MS: '3600001' },
      { QUIRE_OPENAI_BASE_URL: 'https://llm.example.com/?key=sk-abcdefgh' },
      { QUIRE_WHISPER_BASE_URL: 'ftp://sk-abcdefgh.example.com' },
    ]) {
      const key = Object.keys(env)[0]!;
      expect(() => parseConfig(env)).toThrow(ConfigError);
      expect(() => parseConfig(env)).toThrow(key);
      expect(() => parseConfig(env)).not.toThrow(/sk-abcdefgh/);
    }
  });
});
