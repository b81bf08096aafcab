import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../scripts/lib/temporal';

/**
 * Real web processes for tests: `next build web` once per test process into a dist directory
 * of its own (QUIRE_NEXT_DIST_DIR, relative to web/), then any number of `next start` on free
 * ports, each a process group the test can SIGKILL. Set QUIRE_TEST_WEB_DIST to reuse an
 * existing build.
 */
const ROOT = join(__dirname, '../..');
const NEXT_BIN = join(ROOT, 'node_modules/next/dist/bin/next');

let built: Promise<string> | undefined;

export function buildWeb(): Promise<string> {
  built ??= new Promise<string>((resolve, reject) => {
    const reuse = process.env.QUIRE_TEST_WEB_DIST;
    if (reuse && existsSync(join(ROOT, 'web', reuse, 'BUILD_ID'))) {
      resolve(reuse);
      return;
    }
    const distDir = `.next-test-${randomBytes(4).toString('hex')}`;
    const log = join(ROOT, '.data', `${distDir}-build.log`);
    const out = openSync(log, 'w');
    const child = spawn(process.execPath, [NEXT_BIN, 'build', 'web'], {
      cwd: ROOT,
      env: {
        ...process.env,
        QUIRE_NEXT_DIST_DIR: distDir,
        NEXT_TELEMETRY_DISABLED: '1',
        NODE_ENV: 'production',
      },
      stdio: ['ignore', out, out],
    });
    child.on('exit', (code) => {
      if (code === 0) resolve(distDir);
      else
        reject(new Error(`next build failed (${code}): ${readFileSync(log, 'utf8').slice(-2000)}`));
    });
  });
  return built;
}

export function removeWebBuild(distDir: string): void {
  if (process.env.QUIRE_TEST_WEB_DIST === distDir) return;
  rmSync(join(ROOT, 'web', distDir), { recursive: true, force: true });
}

export interface WebProcess {
  url: string;
  port: number;
  child: ChildProcess;
  output(): string;
  /** Kills the process group (SIGKILL by default) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export async function startWeb(
  distDir: string,
  env: Record<string, string>,
  /** A port chosen beforehand (when the settings must name the console's own URL). */
  chosenPort?: number,
): Promise<WebProcess> {
  const port = chosenPort ?? (await freePort());
  let output = '';
  const child = spawn(
    process.execPath,
    [NEXT_BIN, 'start', 'web', '-p', String(port), '-H', '127.0.0.1'],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        // R6: the console takes changes only from its public URL's origin; by default that
        // is the address the tests reach it at.
        QUIRE_PUBLIC_URL: `http://127.0.0.1:${port}`,
        ...env,
        QUIRE_NEXT_DIST_DIR: distDir,
        NEXT_TELEMETRY_DISABLED: '1',
        NODE_ENV: 'production',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`next start exited: ${output.slice(-2000)}`);
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`next start did not answer: ${output.slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    url,
    port,
    child,
    output: () => output,
    async stop(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        child.kill(signal);
      }
      await exited;
    },
  };
}
