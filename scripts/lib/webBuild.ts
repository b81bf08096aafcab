import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';

/**
 * The console's production build (D6): `next build web` into a dist directory under web/,
 * done again only when a source it may include changed. The stamp is a hash of every source
 * file's path, size and content under the folders the web app imports, plus the lock file
 * and configuration; it is written beside the build once the build succeeded.
 */
const SOURCE_DIRS = ['web', 'core', 'db', 'client', 'blobs', 'ingest', 'net', 'providers'];
const SOURCE_FILES = ['package-lock.json', 'tsconfig.json'];
const STAMP = 'quire-source-stamp';

function sourceFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      // Build outputs (.next, .next-*) and editor droppings are not sources.
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile() && entry.name !== 'next-env.d.ts') files.push(path);
    }
  };
  for (const dir of SOURCE_DIRS) if (existsSync(join(root, dir))) walk(join(root, dir));
  for (const file of SOURCE_FILES) if (existsSync(join(root, file))) files.push(join(root, file));
  return files.sort();
}

export function webSourceStamp(root: string): string {
  const hash = createHash('sha256');
  for (const file of sourceFiles(root)) {
    hash.update(relative(root, file));
    hash.update('\0');
    hash.update(readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** True when `web/<distDir>` holds a complete build of today's sources. */
export function webBuildCurrent(root: string, distDir: string): boolean {
  const stamp = join(root, 'web', distDir, STAMP);
  return (
    existsSync(join(root, 'web', distDir, 'BUILD_ID')) &&
    existsSync(stamp) &&
    readFileSync(stamp, 'utf8') === webSourceStamp(root)
  );
}

/**
 * Builds the console into `web/<distDir>` unless the build there is current. A lock
 * directory keeps two starts (or two test runs) from building into the same place at once.
 */
export async function ensureWebBuild(
  root: string,
  distDir: string,
  log: (line: string) => void,
  logFile: string,
): Promise<{ built: boolean }> {
  const lock = join(root, 'web', `${distDir}.lock`);
  const deadline = Date.now() + 20 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A lock older than the longest build is left by a process that died.
      const lockedAt = statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
      if (Date.now() - lockedAt > 20 * 60_000) {
        rmSync(lock, { recursive: true, force: true });
      }
      if (Date.now() > deadline) throw new Error(`web build lock ${lock} held too long`);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
  try {
    if (webBuildCurrent(root, distDir)) return { built: false };
    const stamp = webSourceStamp(root);
    log(`building the console (next build, into web/${distDir}; a few minutes)...`);
    mkdirSync(join(logFile, '..'), { recursive: true });
    const out = openSync(logFile, 'w');
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(
        process.execPath,
        [join(root, 'node_modules/next/dist/bin/next'), 'build', 'web'],
        {
          cwd: root,
          env: {
            ...process.env,
            QUIRE_NEXT_DIST_DIR: distDir,
            NEXT_TELEMETRY_DISABLED: '1',
            NODE_ENV: 'production',
          },
          stdio: ['ignore', out, out],
        },
      );
      child.once('exit', resolve);
    });
    if (code !== 0) {
      throw new Error(
        `next build failed (exit ${code}): ${readFileSync(logFile, 'utf8').slice(-2000)}`,
      );
    }
    writeFileSync(join(root, 'web', distDir, STAMP), stamp);
    return { built: true };
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
