import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../core/config';

describe('configuration (O1)', () => {
  it('runs on laptop defaults', () => {
    const config = parseConfig({});
    expect(config.WORKER_CONCURRENCY).toBe(2);
    expect(config.QUIRE_TASK_QUEUE).toBe('quire-transcription');
    expect(config.QUIRE_MAX_ATTEMPTS).toBe(5);
    expect(config.QUIRE_POLISH_ATTEMPTS).toBe(3);
    expect(config.usingDevelopmentSecret).toBe(true);
  });

  it('O1 rejects WORKER_CONCURRENCY outside 1-16 with a clear message', () => {
    expect(() => parseConfig({ WORKER_CONCURRENCY: '17' })).toThrow(ConfigError);
    expect(() => parseConfig({ WORKER_CONCURRENCY: '0' })).toThrow(/WORKER_CONCURRENCY/);
    expect(parseConfig({ WORKER_CONCURRENCY: '16' }).WORKER_CONCURRENCY).toBe(16);
  });

  it('requires a real secret in production', () => {
    expect(() => parseConfig({ NODE_ENV: 'production' })).toThrow(/QUIRE_SECRET_KEY/);
    const config = parseConfig({ NODE_ENV: 'production', QUIRE_SECRET_KEY: 'x'.repeat(40) });
    expect(config.usingDevelopmentSecret).toBe(false);
  });
});
