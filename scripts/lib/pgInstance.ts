import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * A PostgreSQL server of its own (initdb + pg_ctl on its own port and data directory) for
 * cluster mode (D2) and its drills (D3): restarting it disturbs no other database on the
 * machine. Debian keeps the binaries under /usr/lib/postgresql/<major>/bin; PostgreSQL
 * refuses to run as root, so as root every command runs as the `postgres` user.
 * X7: every role signs in with its password (scram-sha-256 for TCP and the Unix socket alike;
 * no `trust` line): the superuser's is set at initdb, the others by their creator.
 */
export interface PgInstanceOptions {
  /** Directory that holds the data directory, sockets and log (made traversable for the server). */
  baseDir: string;
  dataDir: string;
  port: number;
  logFile: string;
  /** Tests: no fsync (a clean or immediate stop of the server still loses nothing). */
  fast?: boolean;
  /** The `postgres` superuser's password (X7). */
  superuserPassword: string;
}

export interface PgInstance {
  /** The superuser's URL, with its password. */
  url(database: string): string;
  readonly port: number;
  /** The directory of the server's Unix socket. */
  readonly socketDir: string;
  start(): void;
  /** `fast`: clean shutdown; `immediate`: as after a crash, recovery at next start. */
  stop(mode?: 'fast' | 'immediate'): void;
  running(): boolean;
  /** The postmaster's pid while the server runs (its processes are its children). */
  pid(): number | undefined;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors.length === 0) {
    throw new Error(
      'no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)',
    );
  }
  return join(root, majors[0]!, 'bin');
}

const asRoot = process.getuid?.() === 0;

function run(bin: string, args: string[], allowFailure = false): number {
  const command = asRoot ? 'runuser' : bin;
  const argv = asRoot ? ['-u', 'postgres', '--', bin, ...args] : args;
  const result = spawnSync(command, argv, { encoding: 'utf8' });
  if (result.status !== 0 && !allowFailure) {
    throw new Error(`${bin} ${args[0] ?? ''} failed: ${result.stderr || result.stdout}`);
  }
  return result.status ?? 1;
}

/** As root, the `postgres` user must reach into `baseDir` (a mkdtemp directory is 0700). */
function traversable(baseDir: string, path: string): void {
  if (!asRoot) return;
  // The ancestors only: the data directory itself must stay 0700.
  for (
    let dir = dirname(path);
    dir.startsWith(baseDir) && dir !== dirname(dir);
    dir = dirname(dir)
  ) {
    if (!existsSync(dir)) continue;
    const mode = statSync(dir).mode & 0o7777;
    if ((mode & 0o011) !== 0o011) chmodSync(dir, mode | 0o011);
  }
}

function chownToPostgres(path: string): void {
  if (!asRoot) return;
  const pgUser = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim();
  const pgGroup = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim();
  chownSync(path, Number(pgUser), Number(pgGroup));
}

function own(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  chownToPostgres(path);
}

/** X7: a data directory whose client authentication trusts anyone (made before passwords). */
function trustsAnyone(dataDir: string): boolean {
  const hba = readFileSync(join(dataDir, 'pg_hba.conf'), 'utf8');
  return hba
    .split('\n')
    .some((line) => !line.trim().startsWith('#') && /\s(trust|password)\s*$/.test(line));
}

export function pgInstance(options: PgInstanceOptions): PgInstance {
  const bin = binDir();
  const pgCtl = join(bin, 'pg_ctl');
  const { dataDir, port, logFile } = options;
  const socketDir = join(dataDir, '..', `pg-socket-${port}`);
  const settings = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-k ${socketDir}`,
    // Three workers, two web replicas and the Temporal server, each with its pools.
    '-c max_connections=400',
    ...(options.fast ? ['-c fsync=off', '-c full_page_writes=off'] : []),
  ].join(' ');
  return {
    port,
    socketDir,
    url: (database) =>
      `postgres://postgres:${encodeURIComponent(options.superuserPassword)}@127.0.0.1:${port}/${database}`,
    start() {
      if (!existsSync(join(dataDir, 'PG_VERSION'))) {
        own(dataDir);
        traversable(options.baseDir, dataDir);
        // The password reaches initdb in a file only the server's user reads, removed after.
        const pwFile = join(dataDir, '..', 'initdb-password');
        writeFileSync(pwFile, `${options.superuserPassword}\n`, { mode: 0o600 });
        chownToPostgres(pwFile);
        try {
          run(join(bin, 'initdb'), [
            '-D',
            dataDir,
            '-U',
            'postgres',
            '--auth=scram-sha-256',
            `--pwfile=${pwFile}`,
            '-E',
            'UTF8',
            '--no-sync',
          ]);
        } finally {
          rmSync(pwFile, { force: true });
        }
      } else if (trustsAnyone(dataDir)) {
        throw new Error(
          `${dataDir} was made before its roles had passwords (X7): it lets any local user in. ` +
            `Stop the cluster, remove ${join(dataDir, '..')} and start again for a fresh database.`,
        );
      }
      own(socketDir);
      own(join(logFile, '..'));
      traversable(options.baseDir, dataDir);
      traversable(options.baseDir, socketDir);
      traversable(options.baseDir, logFile);
      run(pgCtl, ['-D', dataDir, '-l', logFile, '-o', settings, '-w', '-t', '60', 'start']);
    },
    stop(mode = 'fast') {
      if (!this.running()) return;
      run(pgCtl, ['-D', dataDir, '-m', mode, '-w', '-t', '60', 'stop'], true);
    },
    running() {
      return run(pgCtl, ['-D', dataDir, 'status'], true) === 0;
    },
    pid() {
      const file = join(dataDir, 'postmaster.pid');
      return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
    },
  };
}
