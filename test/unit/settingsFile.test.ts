import { describe, expect, it } from 'vitest';
import {
  type ConfigFiles,
  loadConfig,
  parseConfig,
  parseSettingsText,
  QUIRE_SETTING_NAMES,
  withSettingsFile,
} from '../../core/config';

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

  it('D9 every setting the configuration reads is one cluster mode can pass on', () => {
    for (const name of ['DATABASE_URL', 'QUIRE_NOTIFY_URL', 'QUIRE_WEBHOOK_ALLOW_HOSTS'])
      expect(QUIRE_SETTING_NAMES).toContain(name);
    expect(typeof loadConfig).toBe('function');
  });
});
