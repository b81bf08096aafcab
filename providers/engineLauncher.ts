/**
 * P6: the engine's processes are started by a small process of the worker's
 * (`engineLauncherProcess.mjs`), not by the worker itself. A `spawn` forks its caller: forking
 * the worker copied the page tables of everything it maps and left every page it had written
 * copy-on-write, so each page's engine cost the worker a fault on the next write to each page
 * it touched, a cost that grows with the worker's size and, on virtual machines where a fault
 * traps to the hypervisor, dominated the worker's own CPU per page (docs/design.md, P6). The
 * launcher is small and does little between forks, so its forks are cheap; the worker sends a
 * message per process and reads one back.
 *
 * The launcher is started on first use and again whenever it has gone. A call whose launcher
 * died under it runs once more on a new one (the engine is local: nothing was paid for, and
 * the page's attempt is not at fault); a second loss fails the call `internal`, and whatever
 * the lost launcher had started is killed with its process group. When the worker dies, the
 * launcher's IPC channel closes and it kills what it started, then exits.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ProviderError } from '../core/failures';
import type { ProcessResult } from './engineSupport';

/** From the sources and from the compiled worker alike: both sit one folder below the root. */
const LAUNCHER_SCRIPT = fileURLToPath(
  new URL('../providers/engineLauncherProcess.mjs', import.meta.url),
);

/**
 * The launcher's own V8 heap stays small: a young generation of 1 MB means each of its forks
 * leaves few written pages to fault on again.
 */
const LAUNCHER_NODE_FLAGS = ['--max-semi-space-size=1', '--max-old-space-size=64'];

export interface LaunchRequest {
  program: string;
  args: readonly string[];
  /** The program's whole environment (nothing of the worker's is passed on). */
  env: Record<string, string>;
  /** A file the program reads as its stdin. */
  input: string;
  /** Kills the process; the call then rejects with the signal's reason. */
  signal: AbortSignal;
  /**
   * P8: the process's niceness (0-19). Bulk work starts at `BULK_NICENESS`, so a page a
   * person waits for gets the CPU first, not only the first place in the queue.
   */
  nice?: number;
}

/** P8: the niceness of engine processes for bulk work; interactive work runs at 0. */
export const BULK_NICENESS = 10;

/**
 * The input file could not be opened, or the program could not be started; `code` is the
 * errno code (ENOENT, EACCES, ...).
 */
export class LaunchError extends Error {
  constructor(
    readonly failed: 'input' | 'program',
    readonly code: string,
  ) {
    super(`the ${failed} could not be ${failed === 'input' ? 'read' : 'started'} (${code})`);
  }
}

type Reply =
  | {
      id: number;
      code: number | null;
      signal: NodeJS.Signals | null;
      stdout: string;
      stderr: string;
    }
  | { id: number; error: string; failed: 'input' | 'program' };

interface Pending {
  resolve(result: ProcessResult): void;
  reject(error: unknown): void;
}

/** A launcher process and the calls sent to it that await their reply. */
interface Launcher {
  child: ChildProcess;
  pending: Map<number, Pending>;
  /** Set by close(): its calls fail rather than run again. */
  closing: boolean;
}

export class EngineLauncher {
  private current: Launcher | undefined;
  private nextId = 1;

  /** The launcher's process id while it runs (tests and the benchmark look at its children). */
  get pid(): number | undefined {
    return this.current?.child.pid;
  }

  /** Starts the launcher now rather than on the first call (a worker's start). */
  start(): void {
    this.launcher();
  }

  /** Runs one process to completion through the launcher. */
  async run(request: LaunchRequest): Promise<ProcessResult> {
    try {
      return await this.once(request);
    } catch (error) {
      if (!(error instanceof LauncherLost)) throw error;
      return this.once(request).catch((again: unknown) => {
        throw again instanceof LauncherLost
          ? new ProviderError('internal', 'the engine launcher exited during the call, twice')
          : again;
      });
    }
  }

  /**
   * Kills every running process and stops the launcher; calls still running fail `internal`.
   * The launcher starts again on the next call.
   */
  async close(): Promise<void> {
    const launcher = this.current;
    if (!launcher) return;
    this.current = undefined;
    launcher.closing = true;
    const { child } = launcher;
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
    // Closing the channel is the launcher's signal to kill what it started and exit; until it
    // has, this process waits for it.
    child.ref();
    if (child.connected) child.disconnect();
    await exited;
  }

  private once(request: LaunchRequest): Promise<ProcessResult> {
    const { signal } = request;
    if (signal.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    const launcher = this.launcher();
    const { child, pending } = launcher;
    const id = this.nextId++;
    return new Promise<ProcessResult>((resolve, reject) => {
      const onAbort = () => {
        if (child.connected) child.send({ kill: id });
      };
      const settle = () => {
        pending.delete(id);
        signal.removeEventListener('abort', onAbort);
        // An idle launcher does not keep the worker's event loop alive.
        if (pending.size === 0) child.channel?.unref();
      };
      const aborted = () => signal.reason ?? new Error('aborted');
      pending.set(id, {
        resolve: (result) => {
          settle();
          if (signal.aborted) reject(aborted());
          else resolve(result);
        },
        reject: (error) => {
          settle();
          reject(signal.aborted ? aborted() : error);
        },
      });
      child.channel?.ref();
      signal.addEventListener('abort', onAbort, { once: true });
      child.send({
        id,
        program: request.program,
        args: request.args,
        env: request.env,
        input: request.input,
        nice: request.nice ?? 0,
      });
    });
  }

  private launcher(): Launcher {
    if (this.current?.child.connected) return this.current;
    const child = spawn(process.execPath, [...LAUNCHER_NODE_FLAGS, LAUNCHER_SCRIPT], {
      // Its own stderr is the worker's (a crash of the launcher shows in the worker's log);
      // it is given no environment of the worker's: no secret reaches it or what it starts.
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      env: {} as NodeJS.ProcessEnv,
      serialization: 'json',
      // Its own process group, which the engine processes it starts join: should it die
      // without ending them, the worker ends the group (below).
      detached: true,
    });
    const launcher: Launcher = { child, pending: new Map(), closing: false };
    // The worker may exit while the launcher runs: it does not wait for it.
    child.unref();
    child.channel?.unref();
    child.on('message', (reply: Reply) => {
      const call = launcher.pending.get(reply.id);
      if (!call) return;
      if ('error' in reply) {
        call.reject(new LaunchError(reply.failed, reply.error));
      } else {
        call.resolve(reply);
      }
    });
    const gone = () => {
      if (this.current === launcher) this.current = undefined;
      // A launcher that was killed could not end its engine processes: they would read on,
      // orphaned, holding a core each.
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // No process is left in its group.
        }
      }
      // Calls sent to this launcher never get their reply: each may run once more, unless
      // the launcher was closed on purpose.
      for (const call of [...launcher.pending.values()]) {
        call.reject(
          launcher.closing
            ? new ProviderError('internal', 'the engine was closed during the call')
            : new LauncherLost(),
        );
      }
    };
    child.once('exit', gone);
    child.once('error', gone);
    this.current = launcher;
    return launcher;
  }
}

/** The launcher exited before it replied to a call. */
class LauncherLost extends Error {
  constructor() {
    super('the engine launcher exited');
  }
}
