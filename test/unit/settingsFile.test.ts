import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type ConfigFiles,
  loadConfig,
  parseConfig,
  parseSettingsText,
  QUIRE_SETTING_NAMES,
  withSettingsFile,
} from '../../core/config';
import {
  CLUSTER_SETTINGS_FILE,
  quireProcessEnv,
  readSettingsFile,
} from '../../scripts/lib/cluster';

const filesOf = (entries: Record<string, string>): ConfigFiles => ({
  readFile: (path) => entries[path],
});

describe('one place for settings (D9)', () => {
  it('D9 the settings file is KEY=value lines with comments, export and quotes', () => {
    expect(
      parseSettingsText(
        [
          '# comment',
          '',
          'QUIRE_NOTIFY_URL="http://n.example/x#frag"',
          "export LOG_LEVEL='debug'",
          'WORKER_CONCURRENCY=3 # three',
          'not a setting',
          'EMPTY=',
        ].join('\r\n'),
      ),
    ).toEqual({
      QUIRE_NOTIFY_URL: 'http://n.example/x#frag',
      LOG_LEVEL: 'debug',
      WORKER_CONCURRENCY: '3',
      EMPTY: '',
    });
  });

  it('D9 the settings file (default .env) fills in what the environment leaves unset; the environment wins', () => {
    const files = filesOf({ '.env': 'LOG_LEVEL=debug\nWORKER_CONCURRENCY=3\n' });
    const env = withSettingsFile({ WORKER_CONCURRENCY: '5' }, files);
    const config = parseConfig(env);
    expect(config.LOG_LEVEL).toBe('debug');
    expect(config.WORKER_CONCURRENCY).toBe(5);
  });

  it('D9 QUIRE_ENV_FILE names another file; one that cannot be read is refused, naming it; empty reads none', () => {
    const files = filesOf({ 'deploy/mine.env': 'LOG_LEVEL=warn', '.env': 'LOG_LEVEL=debug' });
    expect(withSettingsFile({ QUIRE_ENV_FILE: 'deploy/mine.env' }, files).LOG_LEVEL).toBe('warn');
    expect(() => withSettingsFile({ QUIRE_ENV_FILE: 'missing.env' }, files)).toThrow(
      /QUIRE_ENV_FILE: cannot read missing.env/,
    );
    expect(withSettingsFile({ QUIRE_ENV_FILE: '' }, files).LOG_LEVEL).toBeUndefined();
    // No .env at all is no fault.
    expect(withSettingsFile({}, filesOf({}))).toEqual({});
  });

  it('D9 cluster mode and compose hand every Quire setting to every Quire process, empty when unset', () => {
    for (const name of ['DATABASE_URL', 'QUIRE_NOTIFY_URL', 'QUIRE_WEBHOOK_ALLOW_HOSTS'])
      expect(QUIRE_SETTING_NAMES).toContain(name);
    expect(QUIRE_SETTING_NAMES).not.toContain('PATH');
    const env = quireProcessEnv({
      shared: readSettingsFile(CLUSTER_SETTINGS_FILE),
      databaseUrl: 'postgres://x',
      temporalAddress: 'x:7233',
      uiUrl: 'http://x',
      publicUrl: 'http://x',
      secretKey: 'k',
      objectStore: { endpoint: 'http://x', accessKeyId: 'a', secretAccessKey: 's' },
      workflowBundle: '/b.js',
      settings: { QUIRE_NOTIFY_URL: 'http://n.example/x', DATABASE_URL: 'postgres://elsewhere' },
    });
    expect(env.QUIRE_NOTIFY_URL).toBe('http://n.example/x');
    expect(env.QUIRE_OPENAI_API_KEY).toBe('');
    // The topology's own settings are its own.
    expect(env.DATABASE_URL).toBe('postgres://x');
    const compose = readFileSync('docker-compose.yml', 'utf8');
    expect(compose).toContain(['QUIRE_NOTIFY_URL: $', '{QUIRE_NOTIFY_URL:-}'].join(''));
    expect(compose).toContain(['QUIRE_OPENAI_API_KEY: $', '{QUIRE_OPENAI_API_KEY:-}'].join(''));
    expect(typeof loadConfig).toBe('function');
  });
});
