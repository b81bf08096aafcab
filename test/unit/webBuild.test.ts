import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { webBuildCurrent, webSourceStamp } from '../../scripts/lib/webBuild';

/** D6: `npm start` serves the production build and builds again only when sources changed. */
let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

function tree(): string {
  root = mkdtempSync(join(tmpdir(), 'quire-webbuild-'));
  for (const [path, text] of Object.entries({
    'web/app/page.tsx': 'export default 1;',
    'core/config.ts': 'export const a = 1;',
    'db/jobs.ts': 'export const b = 2;',
    'package-lock.json': '{}',
  })) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

function markBuilt(distDir: string): void {
  mkdirSync(join(root, 'web', distDir), { recursive: true });
  writeFileSync(join(root, 'web', distDir, 'BUILD_ID'), 'x');
  writeFileSync(join(root, 'web', distDir, 'quire-source-stamp'), webSourceStamp(root));
}

describe('console production build stamp (D6)', () => {
  it('D6 a build is current until a web, core or db source or the lock file changes', () => {
    tree();
    expect(webBuildCurrent(root, '.next')).toBe(false);
    markBuilt('.next');
    expect(webBuildCurrent(root, '.next')).toBe(true);
    for (const [path, text] of [
      ['web/app/page.tsx', 'export default 2;'],
      ['core/config.ts', 'export const a = 3;'],
      ['package-lock.json', '{"v":1}'],
    ] as const) {
      writeFileSync(join(root, path), text);
      expect(webBuildCurrent(root, '.next')).toBe(false);
      markBuilt('.next');
      expect(webBuildCurrent(root, '.next')).toBe(true);
    }
  });

  it('D6 build outputs, tests and docs do not make the build stale', () => {
    tree();
    markBuilt('.next');
    mkdirSync(join(root, 'web/.next/server'), { recursive: true });
    writeFileSync(join(root, 'web/.next/server/chunk.js'), 'built');
    mkdirSync(join(root, 'web/.next-other'), { recursive: true });
    writeFileSync(join(root, 'web/.next-other/BUILD_ID'), 'y');
    mkdirSync(join(root, 'test'), { recursive: true });
    writeFileSync(join(root, 'test/a.test.ts'), 'x');
    writeFileSync(join(root, 'web/next-env.d.ts'), 'generated');
    expect(webBuildCurrent(root, '.next')).toBe(true);
  });
});
