import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { configFiles, QUIRE_SETTING_NAMES, withSettingsFile } from '../core/config';
import { type Cluster, startCluster } from './lib/cluster';
import { ensureDevWorkspace } from './lib/devWorkspace';

/**
 * `npm run start:cluster` (D2): the production topology on this machine. Builds what is
 * missing (Temporal server and sql tool, Temporal UI server, object server, the console),
 * then starts PostgreSQL of its own, the Temporal server on it, the Temporal UI, the object
 * server, three workers and two replicas of the console on the production build (one public
 * origin, the first one's), all with one secret key. Ctrl-C stops everything it started.
 * X7: Temporal speaks mTLS (certificates in <dir>/tls/), Hydra's admin API is a Unix socket,
 * PostgreSQL asks every role for its password (<dir>/postgres-passwords.json).
 *
 * Entry-file settings: QUIRE_CLUSTER_DIR (default .data/cluster), QUIRE_CLUSTER_PORT_BASE
 * (default: Temporal 7233-7242, PostgreSQL 5433, UI 8233, object store 7070, web 3000/3001;
 * with a base B: Temporal B.., PostgreSQL B+10, UI B+11, object store B+12, web B+13..),
 * QUIRE_CLUSTER_WORKERS (3), QUIRE_CLUSTER_WEB_REPLICAS (2), QUIRE_CLUSTER_WEB_DIST (.next).
 */
const root = resolve('.');
const dir = resolve(process.env.QUIRE_CLUSTER_DIR ?? '.data/cluster');
mkdirSync(dir, { recursive: true });
const log = (line: string) => process.stdout.write(`quire: ${line}\n`);

function secretKey(): string {
  if (process.env.QUIRE_SECRET_KEY) return process.env.QUIRE_SECRET_KEY;
  const file = join(dir, 'secret-key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

const base = process.env.QUIRE_CLUSTER_PORT_BASE
  ? Number(process.env.QUIRE_CLUSTER_PORT_BASE)
  : undefined;
const ports = base
  ? {
      temporalBase: base,
      postgres: base + 10,
      ui: base + 11,
      objectStore: base + 12,
      web: [base + 13, base + 14, base + 15, base + 16],
    }
  : {
      temporalBase: 7233,
      postgres: 5433,
      ui: 8233,
      objectStore: 7070,
      web: [3000, 3001, 3002, 3003],
    };

/**
 * D9: every Quire setting of this command's environment and of the settings file under it
 * (QUIRE_ENV_FILE, default .env) reaches every process the cluster starts; the cluster's own
 * topology (database, Temporal, object store, URLs, key, bundle) is its own and wins.
 */
const CLUSTER_OWNED = new Set([
  'NODE_ENV',
  'DATABASE_URL',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'QUIRE_TEMPORAL_UI_URL',
  'QUIRE_PUBLIC_URL',
  'QUIRE_SECRET_KEY',
  'QUIRE_SECRET_KEYS',
  'QUIRE_SECRET_KEY_FILE',
  'QUIRE_S3_ENDPOINT',
  'QUIRE_S3_ACCESS_KEY_ID',
  'QUIRE_S3_SECRET_ACCESS_KEY',
  'QUIRE_BLOB_STORE',
  'QUIRE_BLOB_DIR',
  'QUIRE_WORKFLOW_BUNDLE',
  'QUIRE_HEALTH_FILE',
  'QUIRE_ENV_FILE',
]);
const settings = withSettingsFile(process.env, configFiles);
const passThrough = Object.fromEntries(
  QUIRE_SETTING_NAMES.filter((name) => !CLUSTER_OWNED.has(name) && settings[name]).map((name) => [
    name,
    settings[name] as string,
  ]),
);

let cluster: Cluster | undefined;
let stopping = false;
const starting = new AbortController();
async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    log('stopping...');
    // While starting, the start stops what it began at its next step and rejects.
    starting.abort();
    await cluster?.stop();
    if (cluster || code !== 0) {
      log('stopped');
      process.exit(code);
    }
    return new Promise<never>(() => {});
  }
  return new Promise<never>(() => {});
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

const began = Date.now();
const key = secretKey();
try {
  cluster = await startCluster({
    root,
    dir,
    secretKey: key,
    workers: Number(process.env.QUIRE_CLUSTER_WORKERS ?? 3),
    webReplicas: Number(process.env.QUIRE_CLUSTER_WEB_REPLICAS ?? 2),
    webDistDir: process.env.QUIRE_CLUSTER_WEB_DIST ?? '.next',
    ports,
    env: passThrough,
    signal: starting.signal,
    log,
  });
} catch (error) {
  if (starting.signal.aborted) {
    log('stopped');
    process.exit(0);
  }
  log(String(error instanceof Error ? error.message : error));
  await stop(1);
}
const running = cluster as Cluster;
for (const process of [
  running.temporal,
  running.objectServer,
  running.ui,
  ...running.workers,
  ...running.webs,
]) {
  if (!process) continue;
  process.onUnexpectedExit = (code, signal) =>
    log(`${process.name} exited (${signal ?? code}); see ${process.logFile}`);
}

const workspace = await ensureDevWorkspace(running.databaseUrl, join(dir, 'workspace.json'));

const pids = Object.fromEntries(
  [running.temporal, running.objectServer, running.ui, ...running.workers, ...running.webs]
    .filter((p) => p !== undefined)
    .map((p) => [p.name, p.pid()]),
);
writeFileSync(join(dir, 'pids.json'), JSON.stringify({ postgres: running.postgres.port, ...pids }));
const logs = join(dir, 'logs');
const databaseUrl = new URL(running.databaseUrl);
databaseUrl.password = '';
const tls = running.temporalTls;
process.stdout.write(
  [
    '',
    `  Quire cluster is running (ready in ${Math.round((Date.now() - began) / 1000)} s)`,
    // One console, its replicas behind one public origin (QUIRE_PUBLIC_URL, the first one's):
    // sign-in and forms belong to that origin.
    `  console       ${running.quireEnv.QUIRE_PUBLIC_URL} (public origin; ${running.webs.length} replicas of the one console)`,
    ...running.webs.map((web) => `  ${web.name.padEnd(13)} ${web.url} (console replica)`),
    `  Temporal UI   ${running.uiUrl ?? '(off)'}${running.identity ? ' (operators sign in at the identity provider)' : ''}`,
    ...(running.identity
      ? [
          `  identity      ${running.identity.issuer} (Ory Hydra; the console's single sign-on too)`,
          `  Hydra admin   ${running.identity.adminSocket} (Unix socket, this user only)`,
          `  UI operator   ${running.identity.operator.email} / ${running.identity.operator.password}`,
        ]
      : []),
    `  Temporal      ${running.temporalAddress} (PostgreSQL persistence and visibility; mTLS)`,
    `  Temporal TLS  client certificate ${tls.clientCert}, key ${tls.clientKey}, server CA ${tls.serverCa}`,
    `  PostgreSQL    ${databaseUrl.toString()} (each role's password in ${running.passwordsFile})`,
    `  object store  ${running.objectStore.endpoint} (bucket ${running.objectStore.bucket})`,
    `  workers       ${running.workers.length}`,
    `  workspace     ${workspace.workspaceId}`,
    `  sign in       ${workspace.owner.email} / ${workspace.owner.password} (owner)`,
    `  operator      ${workspace.operator.email} / ${workspace.operator.password}`,
    `  API key       ${workspace.apiKey}`,
    `  secret key    ${join(dir, 'secret-key')} (every process uses it; QUIRE_SECRET_KEY overrides)`,
    `  logs          ${logs}/`,
    '  Ctrl-C stops everything.',
    '',
  ].join('\n'),
);
