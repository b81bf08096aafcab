import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('docker-compose.yml', () => {
  it('is valid for docker-compose and brings up every part of the stack', () => {
    // docker-compose comes from scripts/apt-packages.txt; no Docker engine is needed to check.
    const config = execFileSync('docker-compose', ['config'], { encoding: 'utf8' });
    for (const service of [
      'postgres',
      'temporal',
      'temporal-ui',
      'temporal-setup',
      'migrate',
      'worker',
      'web',
    ]) {
      expect(config).toMatch(new RegExp(`^  ${service}:$`, 'm'));
    }
    expect(config).toContain('DB: postgres12');
    expect(execFileSync('docker-compose', ['config', '-q'], { encoding: 'utf8' })).toBe('');
    // docker-compose is a Python program: two runs take seconds on a loaded 2-core machine.
  }, 30_000);

  it('registers every search attribute the workflows upsert', () => {
    const compose = readFileSync('docker-compose.yml', 'utf8');
    for (const name of [
      'QuireWorkspaceId=Int',
      'QuireJobId=Keyword',
      'QuirePageId=Int',
      'QuireStatus=Keyword',
      'QuireProvider=Keyword',
    ]) {
      expect(compose).toContain(name);
    }
  });
});
