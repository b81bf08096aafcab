import { readdirSync, readFileSync } from 'node:fs';
import type { Pool } from '../../db/pool';

/**
 * CPU seconds of a process from /proc: its own, and that of its waited-for children; and its
 * minor page faults so far.
 */
export interface CpuSample {
  self: number;
  children: number;
  minorFaults: number;
}

const TICKS_PER_SECOND = 100;

/** The pid of a process a benchmark measures, which must be running. */
export function runningPid(name: string, pid: number | undefined): number {
  if (pid === undefined) throw new Error(`${name} is not running`);
  return pid;
}

/**
 * A /proc `stat` file: the command name, and the fields after it (the name may hold spaces
 * and parentheses), so `fields[0]` is the state, `fields[1]` the parent's pid; undefined once
 * the process or thread is gone.
 */
function readStat(file: string): { name: string; fields: string[] } | undefined {
  try {
    const stat = readFileSync(file, 'utf8');
    return {
      name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      fields: stat.slice(stat.lastIndexOf(')') + 2).split(' '),
    };
  } catch {
    return undefined;
  }
}

/** User and system CPU seconds from a stat file's fields. */
const ownSeconds = (fields: string[]) =>
  (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;

export function cpuOf(pid: number): CpuSample {
  const stat = readStat(`/proc/${pid}/stat`);
  if (!stat) return { self: 0, children: 0, minorFaults: 0 };
  const { fields } = stat;
  return {
    self: ownSeconds(fields),
    children: (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND,
    minorFaults: Number(fields[7]),
  };
}

/**
 * The worker's CPU (P6): its own and that of its live helper processes (the engine launcher),
 * and apart, the engine processes either has reaped (an engine process still running is in
 * neither until it is reaped); `own` is the worker process's alone, and `threads` its live
 * threads' by name.
 */
export function workerCpu(
  pid: number,
): CpuSample & { own: number; threads: Record<string, number> } {
  const total = cpuOf(pid);
  const own = total.self;
  for (const child of childrenByParent().get(pid) ?? []) {
    if (commandOf(child) === ENGINE_COMMAND) continue;
    const helper = cpuOf(child);
    total.self += helper.self;
    total.children += helper.children;
    total.minorFaults += helper.minorFaults;
  }
  return { ...total, own, threads: threadsOf(pid) };
}

/**
 * CPU seconds of a process's live threads by thread name, the main thread as `main` (P6):
 * where a worker's own CPU goes (its main thread, V8's helpers and libuv's pool, the SDK
 * core's runtime). Threads that exit take their CPU out of this view; the process's own
 * figure keeps it, so the difference of two samples' totals and this view's is the exited
 * threads' share.
 */
export function threadsOf(pid: number): Record<string, number> {
  const byName: Record<string, number> = {};
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const task of tasks) {
    const stat = readStat(`/proc/${pid}/task/${task}/stat`);
    if (!stat) continue;
    // Node names every thread of its own (V8's helpers, libuv's pool) after the process.
    const name = task === String(pid) ? 'main' : stat.name;
    byName[name] = (byName[name] ?? 0) + ownSeconds(stat.fields);
  }
  return byName;
}

const ENGINE_COMMAND = 'tesseract';

function commandOf(pid: number): string {
  return readStat(`/proc/${pid}/stat`)?.name ?? '';
}

/** Live processes by their parent's pid. */
function childrenByParent(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(`/proc/${entry}/stat`);
    if (!stat) continue; // Gone while listed.
    const ppid = Number(stat.fields[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(entry));
    children.set(ppid, list);
  }
  return children;
}

/**
 * CPU seconds of every PostgreSQL backend serving this database, by pid (same host). A
 * backend that exits between two samples is lost, so the figure is a lower bound.
 */
export async function postgresBackendCpu(pool: Pool): Promise<Map<number, number>> {
  const { rows } = await pool.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
  );
  return new Map(rows.map((r) => [r.pid, cpuOf(r.pid).self]));
}

/**
 * CPU seconds of a PostgreSQL server's live processes by what they serve (P6): each backend
 * under its database's name, and under `server` every other process (checkpointer, WAL
 * writer, autovacuum) and the postmaster itself with what it has reaped. A backend that exits
 * between two samples moves its whole CPU to `server`, so a pooled backend's figure is exact
 * and a short-lived one's is counted as the server's. The parts sum to the whole server.
 */
export function postgresByDatabase(postmaster: number): Record<string, number> {
  const byDatabase: Record<string, number> = {};
  const add = (name: string, pid: number) => {
    const { self, children } = cpuOf(pid);
    byDatabase[name] = (byDatabase[name] ?? 0) + self + children;
  };
  add('server', postmaster);
  for (const pid of childrenByParent().get(postmaster) ?? []) add(databaseOf(pid) ?? 'server', pid);
  return byDatabase;
}

function databaseOf(pid: number): string | undefined {
  try {
    return databaseOfTitle(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '));
  } catch {
    return undefined;
  }
}

/**
 * A backend's database from its process title, `postgres: [<cluster name>:] <user> <database>
 * <client> <activity>`, the client an address with its port or `[local]`; undefined for the
 * server's other processes.
 */
export function databaseOfTitle(title: string): string | undefined {
  const words = title.trim().split(/\s+/);
  const client = words.findIndex((word, i) => i >= 3 && /\(\d+\)$|^\[local\]$/.test(word));
  return words[0] === 'postgres:' && client > 0 ? words[client - 1] : undefined;
}

/**
 * CPU seconds of a whole process tree so far: every live process under `root` (found by
 * parent pid in /proc), each with what it has reaped of its own exited children. A process
 * that exits between two samples moves from its own line to its parent's reaped share, so
 * the difference of two samples is the tree's use between them.
 */
export function treeCpu(root: number): number {
  const children = childrenByParent();
  let total = 0;
  const pending = [root];
  while (pending.length > 0) {
    const pid = pending.pop()!;
    const { self, children: reaped } = cpuOf(pid);
    total += self + reaped;
    pending.push(...(children.get(pid) ?? []));
  }
  return total;
}
