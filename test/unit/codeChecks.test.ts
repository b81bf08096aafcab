/**
 * The repository's own checks run with its tests: the linter and formatter (`npm run lint`)
 * and the type checker over the worker, API, database and test code. The console's types are
 * checked by its production build, which the browser tests need anyway. A stylesheet left
 * with an unclosed block by a merge nests every rule after it and parses without an error in
 * a browser; only the linter sees it.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/fixtures';

function run(script: string, args: string[]) {
  const result = spawnSync(process.execPath, [path.join(REPO_ROOT, script), ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('the repository passes its own checks', () => {
  it('biome check . finds nothing (lint and format, stylesheets included)', () => {
    const { status, output } = run('node_modules/@biomejs/biome/bin/biome', [
      'check',
      '.',
      '--max-diagnostics=20',
    ]);
    expect(status, output).toBe(0);
  }, 60_000);

  it('tsc --noEmit -p . finds no type error', () => {
    const { status, output } = run('node_modules/typescript/bin/tsc', ['--noEmit', '-p', '.']);
    expect(status, output).toBe(0);
  }, 120_000);
});
