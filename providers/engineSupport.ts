/**
 * Helpers shared by the local engines (tesseract.js, pocketsphinx): language codes,
 * cancellation, finding and running Debian programs. Messages built here never carry
 * transcript text or file contents.
 */
import { spawn } from 'node:child_process';
import { access, constants, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_PROGRAM_PATH } from '../core/config';
import { ProviderError } from '../core/failures';

export { tesseractLanguages } from '../core/engineModels';

/** Throws the signal's reason when the call was cancelled before it started. */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw signal.reason ?? new Error('aborted');
}

/**
 * Races a promise against the call's AbortSignal. The underlying work may go on (an engine
 * cannot always be interrupted); the caller simply stops waiting for it.
 */
export function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** The absolute path of a program on the search path (or the given absolute path), or undefined. */
export async function findProgram(
  name: string,
  searchPath: string = DEFAULT_PROGRAM_PATH,
): Promise<string | undefined> {
  const candidates = path.isAbsolute(name)
    ? [name]
    : searchPath
        .split(path.delimiter)
        .filter((dir) => dir.length > 0)
        .map((dir) => path.join(dir, name));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A program the engine needs, with the Debian package that ships it. */
export interface RequiredProgram {
  program: string;
  debianPackage: string;
}

/**
 * Finds every program or throws one ProviderError naming the Debian packages to install.
 * The class is `outage`: the engine is unavailable on this machine until an operator
 * installs it, so its queue pauses instead of failing jobs.
 */
export async function requirePrograms(
  required: readonly RequiredProgram[],
  searchPath?: string,
): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  const missing: RequiredProgram[] = [];
  for (const r of required) {
    const at = await findProgram(r.program, searchPath);
    if (at) found[r.program] = at;
    else missing.push(r);
  }
  if (missing.length > 0) {
    const names = missing.map((m) => `${m.program} (Debian package ${m.debianPackage})`).join(', ');
    const packages = [...new Set(missing.map((m) => m.debianPackage))].join(' ');
    throw new ProviderError('outage', `missing ${names}: install with apt-get install ${packages}`);
  }
  return found;
}

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to completion (no shell), killing it when the signal aborts. */
export function runProgram(
  program: string,
  args: readonly string[],
  options: { signal?: AbortSignal; cwd?: string; maxOutput?: number } = {},
): Promise<ProcessResult> {
  const maxOutput = options.maxOutput ?? 1_000_000;
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: options.signal,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < maxOutput) stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < maxOutput) stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Engine job ids of the on-disk engines: one directory per job, named by a UUID. */
export const ENGINE_JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The engine jobs kept on this machine under `workDir` (one directory each, with a
 * `job.json` holding `createdAt`), for the stranded-job sweep (O3). A job cut off during
 * submit has no record yet: its directory's age stands in.
 */
export async function listOnDiskEngineJobs(
  workDir: string,
): Promise<{ engineJobId: string; createdAt: Date }[]> {
  let names: string[];
  try {
    names = await readdir(workDir);
  } catch {
    return [];
  }
  const jobs: { engineJobId: string; createdAt: Date }[] = [];
  for (const name of names) {
    if (!ENGINE_JOB_ID.test(name)) continue;
    const dir = path.join(workDir, name);
    try {
      const record = JSON.parse(await readFile(path.join(dir, 'job.json'), 'utf8')) as {
        createdAt: string;
      };
      jobs.push({ engineJobId: name, createdAt: new Date(record.createdAt) });
    } catch {
      const info = await stat(dir).catch(() => undefined);
      if (info) jobs.push({ engineJobId: name, createdAt: info.mtime });
    }
  }
  return jobs;
}
