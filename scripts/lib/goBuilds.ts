import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The programs cluster mode runs (D2), built from the Go module proxy once into a cache
 * outside the clone (`~/.cache/quire/<name>-<version>/`), like the Temporal CLI: the
 * Temporal server and its sql schema tool (the version the CLI embeds), the Temporal UI
 * server (the one the CLI bundles), and an S3-compatible object server.
 */
export const TEMPORAL_SERVER_VERSION = '1.29.1';
export const TEMPORAL_UI_VERSION = '2.42.1';
export const OBJECT_SERVER_VERSION = '1.8.0';
/** R2, R4: the identity provider the tests and the development stack sign in through. */
export const HYDRA_VERSION = '2.3.0';
/** R9: the SMTP sink the tests send mail to and read back through its HTTP API. */
export const MAIL_SINK_VERSION = '1.33.1';

interface GoProgram {
  /** Cache directory name, without the version. */
  name: string;
  version: string;
  /** Packages installed together (one module, one version). */
  packages: string[];
  /** Binaries the install leaves in the cache directory. */
  binaries: string[];
  /**
   * A program whose go.mod carries `replace` directives cannot be `go install`ed by version:
   * it is built inside a small module of our own (`go get -tool`, then `go build`) that
   * repeats those replacements, one binary named after the cache directory.
   */
  toolModule?: { replaces: string[] };
}

const PROGRAMS = {
  temporalServer: {
    name: 'temporal-server',
    version: TEMPORAL_SERVER_VERSION,
    packages: [
      `go.temporal.io/server/cmd/server@v${TEMPORAL_SERVER_VERSION}`,
      `go.temporal.io/server/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`,
    ],
    binaries: ['server', 'sql'],
  },
  temporalUi: {
    name: 'temporal-ui',
    version: TEMPORAL_UI_VERSION,
    packages: [`github.com/temporalio/ui-server/v2/cmd/server@v${TEMPORAL_UI_VERSION}`],
    binaries: ['server'],
  },
  objectServer: {
    name: 'versitygw',
    version: OBJECT_SERVER_VERSION,
    packages: [`github.com/versity/versitygw/cmd/versitygw@v${OBJECT_SERVER_VERSION}`],
    binaries: ['versitygw'],
  },
  hydra: {
    name: 'hydra',
    version: HYDRA_VERSION,
    packages: [`github.com/ory/hydra/v2@v${HYDRA_VERSION}`],
    binaries: ['hydra'],
    // Hydra builds its database layer against Ory's fork of pop (its go.mod says so).
    toolModule: {
      replaces: [
        'github.com/gobuffalo/pop/v6=github.com/ory/pop/v6@v6.2.1-0.20241121111754-e5dfc0f3344b',
      ],
    },
  },
  mailSink: {
    name: 'mailpit',
    version: MAIL_SINK_VERSION,
    packages: [`github.com/axllent/mailpit@v${MAIL_SINK_VERSION}`],
    binaries: ['mailpit'],
  },
} satisfies Record<string, GoProgram>;

export type ProgramName = keyof typeof PROGRAMS;

function cacheBase(): string {
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'quire');
}

export function programDir(program: ProgramName): string {
  const { name, version } = PROGRAMS[program];
  return join(cacheBase(), `${name}-${version}`);
}

function goBinary(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v go'], { encoding: 'utf8' });
  if (found.status === 0 && found.stdout.trim()) return found.stdout.trim();
  return existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined;
}

/**
 * `go install` into `gobin`, one build at a time per cache directory: processes that start
 * together (test runs in two checkouts, `npm start` beside `npm test`) wait for the first
 * build under an flock(1) lock and then find its binaries, instead of building them again.
 */
export function goInstall(go: string, packages: string[], gobin: string) {
  mkdirSync(gobin, { recursive: true });
  const env = { ...process.env, GOBIN: gobin, GOFLAGS: '-mod=mod' };
  const stdio: ['ignore', 'inherit', 'inherit'] = ['ignore', 'inherit', 'inherit'];
  const install = ['install', ...packages];
  const flock = spawnSync('sh', ['-c', 'command -v flock'], { encoding: 'utf8' });
  if (flock.status !== 0) return spawnSync(go, install, { env, stdio });
  // Under the lock, a build that finished meanwhile leaves nothing to do but a quick relink
  // check: `go install` reuses its build cache.
  return spawnSync('flock', [join(gobin, '.build.lock'), go, ...install], { env, stdio });
}

/**
 * Builds `pkg@version` as a tool of a module of our own in `<dir>/module`, with the program's
 * own replacements, into `<dir>/<binary>`; under the same flock as `goInstall`.
 */
function goBuildTool(
  go: string,
  pkgAtVersion: string,
  replaces: string[],
  dir: string,
  binary: string,
) {
  const moduleDir = join(dir, 'module');
  mkdirSync(moduleDir, { recursive: true });
  const pkg = pkgAtVersion.split('@')[0]!;
  const output = join(dir, binary);
  // Everything under the lock, the module's go.mod included: a second process that starts
  // while the first builds would otherwise rewrite go.mod under it ("existing contents have
  // changed since last read"), and then finds the first one's binary instead of building.
  const steps = [
    `{ test -x ${output} || { printf "module quire.local/tool-build\\n\\ngo 1.24\\n" > go.mod`,
    ...replaces.map((r) => `${go} mod edit -replace ${r}`),
    `${go} get -tool ${pkgAtVersion}`,
    `${go} mod tidy`,
    `${go} build -o ${output} ${pkg}; }; }`,
  ].join(' && ');
  const env = { ...process.env, GOFLAGS: '-mod=mod' };
  const stdio: ['ignore', 'inherit', 'inherit'] = ['ignore', 'inherit', 'inherit'];
  const flock = spawnSync('sh', ['-c', 'command -v flock'], { encoding: 'utf8' });
  const command = flock.status === 0 ? `flock ${join(dir, '.build.lock')} sh -c '${steps}'` : steps;
  return spawnSync('sh', ['-c', command], { cwd: moduleDir, env, stdio });
}

/** The module's source directory in the Go module cache (after a build it is there). */
function goModuleDir(go: string, modulePath: string, version: string): string {
  const found = spawnSync(go, ['mod', 'download', '-json', `${modulePath}@v${version}`], {
    encoding: 'utf8',
    env: { ...process.env, GOFLAGS: '-mod=mod' },
  });
  if (found.status !== 0) throw new Error(`go mod download ${modulePath} failed: ${found.stderr}`);
  return (JSON.parse(found.stdout) as { Dir: string }).Dir;
}

/**
 * Paths of the program's binaries, building them first when the cache lacks any. The
 * build runs synchronously with its output shown: minutes on two cores, once per machine.
 */
export function findOrBuild(
  program: ProgramName,
  log: (line: string) => void = console.log,
): Record<string, string> {
  const spec: GoProgram = PROGRAMS[program];
  const dir = programDir(program);
  const paths = Object.fromEntries(spec.binaries.map((b) => [b, join(dir, b)]));
  if (Object.values(paths).every((p) => existsSync(p))) return paths;
  const go = goBinary();
  if (!go) {
    throw new Error(
      [
        `No ${spec.name} ${spec.version} in ${dir}, and no Go toolchain to build it.`,
        `Install Go 1.23+ and run: GOBIN=${dir} go install ${spec.packages.join(' ')}`,
        'or run the same topology with Docker: docker compose up',
      ].join('\n'),
    );
  }
  log(`building ${spec.name} v${spec.version} with ${go} (once; a few minutes)...`);
  const build = spec.toolModule
    ? goBuildTool(go, spec.packages[0]!, spec.toolModule.replaces, dir, spec.binaries[0]!)
    : goInstall(go, spec.packages, dir);
  const missing = Object.values(paths).filter((p) => !existsSync(p));
  if (build.status !== 0 || missing.length > 0) {
    throw new Error(`building ${spec.name} failed (exit ${build.status}); see the output above`);
  }
  return paths;
}

/** The Temporal server's schema directories, from its module (downloaded by the build). */
export function temporalSchemaDirs(): { temporal: string; visibility: string } {
  const go = goBinary();
  if (!go) throw new Error('the Temporal server schema needs the Go toolchain (go mod download)');
  const dir = goModuleDir(go, 'go.temporal.io/server', TEMPORAL_SERVER_VERSION);
  return {
    temporal: join(dir, 'schema/postgresql/v12/temporal/versioned'),
    visibility: join(dir, 'schema/postgresql/v12/visibility/versioned'),
  };
}
