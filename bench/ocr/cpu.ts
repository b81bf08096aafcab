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

export function cpuOf(pid: number): CpuSample {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [minflt, utime, stime, cutime, cstime] = [7, 11, 12, 13, 14].map((i) =>
      Number(fields[i]),
    );
    return {
      self: (utime! + stime!) / TICKS_PER_SECOND,
      children: (cutime! + cstime!) / TICKS_PER_SECOND,
      minorFaults: minflt!,
    };
  } catch {
    return { self: 0, children: 0, minorFaults: 0 };
  }
}

/**
 * The worker's CPU (P6): its own and that of its live helper processes (the engine launcher),
 * and apart, the engine processes either has reaped. An engine process still running is in
 * neither until it is reaped, as before the launcher.
 */
export function workerCpu(pid: number): CpuSample {
  const total = cpuOf(pid);
  for (const child of childrenByParent().get(pid) ?? []) {
    if (commandOf(child) === ENGINE_COMMAND) continue;
    const helper = cpuOf(child);
    total.self += helper.self;
    total.children += helper.children;
    total.minorFaults += helper.minorFaults;
  }
  return total;
}

/**
 * CPU seconds of a process's live threads by thread name, the main thread as `main` (P6):
 * where a worker's own CPU goes (its main thread, V8's helpers and libuv's pool, the SDK
 * core's runtime). Threads that exit
 * take their CPU out of this view; the process's own figure keeps it, so the difference of
 * two samples' totals and this view's is the exited threads' share.
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
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      // Node names every thread of its own (V8's helpers, libuv's pool) after the process.
      const name =
        task === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const seconds = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
      byName[name] = (byName[name] ?? 0) + seconds;
    } catch {
      // Exited while listed.
    }
  }
  return byName;
}

const ENGINE_COMMAND = 'tesseract';

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Live processes by their parent's pid. */
function childrenByParent(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // Gone while listed.
    }
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
