import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { Connection } from '@temporalio/client';
import { goInstall } from './goBuilds';

/**
 * Finds, builds and starts the Temporal CLI's dev server (`temporal server start-dev`).
 * No prebuilt binary can be downloaded on every machine, so when none is found the CLI is
 * built from the Go module proxy into a cache outside the clone, once.
 */
export const TEMPORAL_CLI_VERSION = '1.5.1';

export const SEARCH_ATTRIBUTES = {
  QuireWorkspaceId: 'Int',
  QuireJobId: 'Keyword',
  QuirePageId: 'Int',
  QuireStatus: 'Keyword',
  QuireProvider: 'Keyword',
} as const;

/**
 * M5: server settings Quire relies on. `matching.enableFairness` makes matching dispatch a
 * backlogged task queue fairly across the fairness keys jobs carry (one per workspace); it
 * keeps the backlog in the server's v2 task tables, so it is on from a queue's first task
 * (switching it on over an existing backlog leaves that backlog behind in the old tables).
 * P8: `matching.useNewMatcher` is the priority-enabled matcher (server 1.29 / CLI 1.5.1; off by
 * default, implied by fairness): tasks of a lower priority key go first. Matching orders each
 * partition of a task queue on its own and a poller takes from whichever partition it reaches,
 * so with the default four a person's task waited until a poll happened on its partition: one
 * partition (read and write) makes the priority order the queue's. The same settings are in
 * deploy/temporal/dynamicconfig.yaml for cluster mode and compose (docs/design.md, P8).
 */
export const TEMPORAL_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  'matching.enableFairness': true,
  'matching.useNewMatcher': true,
  'matching.numTaskqueueWritePartitions': 1,
  'matching.numTaskqueueReadPartitions': 1,
  // P6: the dev server reads the namespace and the cluster's search attributes from its
  // database on every search-attribute lookup unless this is off (the CLI turns it on for
  // attributes created while it runs); Quire's are registered at start (`--search-attribute`).
  'system.forceSearchAttributesCacheRefreshOnRead': false,
};

/**
 * P6: the Go runtime of a Temporal server that shares its host with the workers and the
 * engines: the dev server, and cluster mode's server on PostgreSQL (`npm run start:cluster`
 * runs the whole topology on one machine). One processor for its goroutines (no thread woken
 * to spin for work each time a request arrives: cluster mode's server at rest went from about
 * 0.021 to 0.015 CPU-s a second), a collection at twice the live heap rather than once, and
 * freed memory handed back lazily (MADV_FREE), so the pages it reuses are not faulted in
 * again. Measured by bench/throughput, bench/ocr and bench/cluster (docs/design.md); the
 * environment wins over each. Compose keeps Go's defaults: its server is a container an
 * operator sizes, often on a host of its own.
 */
export const ONE_HOST_GO_RUNTIME: Readonly<Record<string, string>> = {
  GOMAXPROCS: '1',
  GOGC: '200',
  GODEBUG: 'madvdontneed=0',
};

/** A one-host Temporal server's Go runtime: Quire's settings under the environment's (empty: Go's default). */
export function oneHostGoRuntime(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return Object.fromEntries(
    Object.entries(ONE_HOST_GO_RUNTIME).map(([key, value]) => [key, env[key] ?? value]),
  );
}

export function temporalCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(base, 'quire', `temporal-${TEMPORAL_CLI_VERSION}`);
}

function onPath(name: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  const path = found.stdout.trim();
  return found.status === 0 && path ? path : undefined;
}

/** The `temporal` binary: QUIRE_TEMPORAL_BIN, PATH, the cache, else built with `go install`. */
export function findOrBuildTemporal(log: (line: string) => void = console.log): string {
  const explicit = process.env.QUIRE_TEMPORAL_BIN;
  if (explicit) {
    if (!existsSync(explicit)) throw new Error(`QUIRE_TEMPORAL_BIN=${explicit} does not exist`);
    return explicit;
  }
  const cached = join(temporalCacheDir(), 'temporal');
  if (existsSync(cached)) return cached;
  const fromPath = onPath('temporal');
  if (fromPath) return fromPath;
  const go =
    onPath('go') ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    throw new Error(
      [
        'No Temporal CLI found, and no Go toolchain to build one. Any one of these works:',
        `  - install Go 1.23+ and run: GOBIN=${temporalCacheDir()} go install github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`,
        '  - put a `temporal` binary on PATH, or set QUIRE_TEMPORAL_BIN to one',
        '  - or run the whole stack with Docker: docker compose up',
      ].join('\n'),
    );
  }
  log(`building the Temporal CLI v${TEMPORAL_CLI_VERSION} with ${go} (once; a few minutes)...`);
  const build = goInstall(
    go,
    [`github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`],
    temporalCacheDir(),
  );
  if (build.status !== 0 || !existsSync(cached)) {
    throw new Error(
      `building the Temporal CLI failed (exit ${build.status}); see the output above`,
    );
  }
  return cached;
}

export interface DevServerOptions {
  /** Omitted: a free loopback port, tried again with another when the server loses the race for it. */
  port?: number;
  uiPort?: number;
  /** SQLite file; omitted means in memory. */
  dbFile?: string;
  /** The server's Prometheus endpoint (`/metrics`); omitted, the CLI picks a free port. */
  metricsPort?: number;
  logFile?: string;
  headless?: boolean;
}

export interface DevServer {
  address: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function startDevServer(
  binary: string,
  options: DevServerOptions,
): Promise<DevServer> {
  if (options.port !== undefined) return startDevServerOn(binary, options.port, options);
  // A port found free can be taken before the server binds it (tests and benchmarks start
  // many processes at once): the server then exits at start, and another port is tried.
  for (let tries = 1; ; tries++) {
    try {
      return await startDevServerOn(binary, await freePort(), options);
    } catch (error) {
      if (!(error instanceof DevServerExited) || tries >= 3) throw error;
    }
  }
}

class DevServerExited extends Error {}

/** A loopback port nothing listens on at the moment of asking. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

async function startDevServerOn(
  binary: string,
  port: number,
  options: DevServerOptions,
): Promise<DevServer> {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--log-level',
    'warn',
  ];
  if (options.dbFile) {
    mkdirSync(dirname(options.dbFile), { recursive: true });
    args.push('--db-filename', options.dbFile);
  }
  if (options.metricsPort) args.push('--metrics-port', String(options.metricsPort));
  if (options.headless) args.push('--headless');
  else if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
    args.push('--search-attribute', `${name}=${type}`);
  }
  for (const [name, value] of Object.entries(TEMPORAL_DYNAMIC_CONFIG)) {
    args.push('--dynamic-config-value', `${name}=${JSON.stringify(value)}`);
  }
  let stdio: Array<'ignore' | number> = ['ignore', 'ignore', 'ignore'];
  if (options.logFile) {
    mkdirSync(dirname(options.logFile), { recursive: true });
    const fd = openSync(options.logFile, 'a');
    stdio = ['ignore', fd, fd];
  }
  const child = spawn(binary, args, {
    stdio,
    detached: false,
    env: { ...process.env, ...oneHostGoRuntime() },
  });
  const address = `127.0.0.1:${port}`;
  let exited: number | null = null;
  child.on('exit', (code) => {
    exited = code ?? -1;
  });
  try {
    await waitForTemporal(address, 90_000, () => exited);
  } catch (error) {
    if (exited === null) child.kill('SIGKILL');
    throw exited === null ? error : new DevServerExited((error as Error).message);
  }
  return {
    address,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(timer);
    },
  };
}

/** Waits until the frontend answers and Quire's search attributes are registered. */
export async function waitForTemporal(
  address: string,
  timeoutMs: number,
  exitCode: () => number | null = () => null,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const code = exitCode();
    if (code !== null) throw new Error(`the Temporal dev server exited with code ${code}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        const attrs = await connection.operatorService.listSearchAttributes({
          namespace: 'default',
        });
        const custom = attrs.customAttributes ?? {};
        if (Object.keys(SEARCH_ATTRIBUTES).every((name) => name in custom)) return;
        lastError = new Error('search attributes not registered yet');
      } finally {
        await connection.close();
      }
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(
    `Temporal at ${address} did not answer within ${timeoutMs} ms: ${String(lastError)}`,
  );
}
