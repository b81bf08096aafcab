import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname } from 'node:path';

/**
 * A long-running program of the cluster (D2): started in its own process group with its
 * output appended to a log file, stopped with SIGTERM (then SIGKILL after a grace period),
 * killed outright for the drills (D3), and started again under the same settings.
 */
export interface ManagedProcess {
  readonly name: string;
  readonly logFile: string;
  pid(): number | undefined;
  running(): boolean;
  start(): Promise<void>;
  /** Sends `signal` to the whole process group and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM, then SIGKILL once `graceMs` has passed. */
  stop(graceMs?: number): Promise<void>;
  /** Called when the process exits without having been asked to. */
  onUnexpectedExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
}

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string | undefined>;
  cwd?: string;
  logFile: string;
  /** Resolves once the program serves; rejects with the reason it does not. */
  ready: (exited: () => boolean) => Promise<void>;
}

export function managedProcess(spec: ProcessSpec): ManagedProcess {
  let child: ChildProcess | undefined;
  let exit: Promise<void> = Promise.resolve();
  let expected = false;
  const self: ManagedProcess = {
    name: spec.name,
    logFile: spec.logFile,
    pid: () => child?.pid,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    async start() {
      if (self.running()) return;
      mkdirSync(dirname(spec.logFile), { recursive: true });
      const out = openSync(spec.logFile, 'a');
      expected = false;
      const started = spawn(spec.command, spec.args, {
        cwd: spec.cwd,
        env: spec.env as NodeJS.ProcessEnv,
        stdio: ['ignore', out, out],
        detached: true,
      });
      child = started;
      exit = new Promise((resolve) =>
        started.once('exit', (code, signal) => {
          if (!expected) self.onUnexpectedExit?.(code, signal);
          resolve();
        }),
      );
      const exited = () => started.exitCode !== null || started.signalCode !== null;
      try {
        await spec.ready(exited);
      } catch (error) {
        await self.kill('SIGKILL');
        throw new Error(`${spec.name} did not start (log: ${spec.logFile}): ${String(error)}`);
      }
    },
    async kill(signal = 'SIGKILL') {
      if (!child || !self.running()) return;
      expected = true;
      try {
        process.kill(-(child.pid as number), signal);
      } catch {
        child.kill(signal);
      }
      await exit;
    },
    async stop(graceMs = 15_000) {
      if (!child || !self.running()) return;
      const timer = setTimeout(() => void self.kill('SIGKILL'), graceMs);
      await self.kill('SIGTERM');
      clearTimeout(timer);
    },
  };
  return self;
}

/** Polls `check` until it resolves true, the process exits, or `timeoutMs` passes. */
export async function pollReady(
  what: string,
  check: () => Promise<boolean>,
  exited: () => boolean,
  timeoutMs: number,
  intervalMs = 250,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    if (exited()) throw new Error(`${what} exited`);
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(`${what} not ready within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
}

export async function httpOk(url: string): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  await response.body?.cancel();
  return response.status === 200;
}

export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** `count` consecutive free ports on the loopback, starting at a random base. */
export async function freePortRange(count: number): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    // Below 32 768: Temporal keeps membership ports in a smallint column.
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    let ok = true;
    for (let p = base; p < base + count && ok; p++) ok = await portFree(p);
    if (ok) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}
