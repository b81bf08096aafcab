import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { type ClusterTls, temporalTlsConfig } from './clusterTls';
import { findOrBuild, temporalSchemaDirs } from './goBuilds';
import { type ManagedProcess, managedProcess, pollReady } from './processes';
import { oneHostGoRuntime, SEARCH_ATTRIBUTES } from './temporal';

/**
 * The Temporal server of cluster mode (D2): built from go.temporal.io/server/cmd/server, on
 * PostgreSQL persistence with SQL visibility. Its schema is prepared by the server's own sql
 * tool (setup-schema, then update-schema from the module's versioned directories); the
 * settings file is deploy/temporal/server.yaml, shared with docker-compose.yml.
 */
export const TEMPORAL_CONFIG_DIR = 'deploy/temporal';

export interface TemporalDatabase {
  host: string;
  port: number;
  user: string;
  password?: string;
  database: string;
  visibilityDatabase: string;
}

/** setup-schema (version table) then update-schema for both databases; safe to repeat. */
export function prepareTemporalSchema(db: TemporalDatabase, log: (line: string) => void): void {
  const { sql } = findOrBuild('temporalServer', log);
  const dirs = temporalSchemaDirs();
  const common = ['--plugin', 'postgres12', '--ep', db.host, '-p', String(db.port), '-u', db.user];
  // X7: the password in the tool's environment (SQL_PASSWORD), which other local users cannot
  // read, not on its command line, which they can.
  const env = { ...process.env, SQL_PASSWORD: db.password ?? '' };
  for (const [database, dir] of [
    [db.database, dirs.temporal],
    [db.visibilityDatabase, dirs.visibility],
  ] as const) {
    for (const args of [
      ['--db', database, 'setup-schema', '-v', '0.0'],
      ['--db', database, 'update-schema', '-d', dir],
    ]) {
      const result = spawnSync(sql as string, [...common, ...args], { encoding: 'utf8', env });
      if (result.status !== 0) {
        throw new Error(
          `temporal sql ${args.slice(2).join(' ')} on ${database} failed: ${result.stderr}`,
        );
      }
    }
  }
}

/** The settings the server's config template reads (deploy/temporal/server.yaml). */
/** R4: the frontend checks callers' JWTs against these keys (empty: it checks nothing). */
export interface TemporalAuthorization {
  keySourceUri: string;
  audience?: string;
}

/** The server's services; the internal frontend serves the server's own calls (R4). */
export const TEMPORAL_SERVICES = [
  'frontend',
  'internal-frontend',
  'history',
  'matching',
  'worker',
] as const;

/** Two refreshes of the server's namespace cache (`system.namespaceCacheRefreshInterval`, 2 s). */
const SEARCH_ATTRIBUTES_SETTLE_MS = 4_500;

/** Where the server's own services, and the cluster's bootstrap, reach the server. */
export const internalFrontendAddress = (portBase: number) => `127.0.0.1:${portBase + 17}`;

export function temporalServerEnv(
  db: TemporalDatabase,
  portBase: number,
  root: string,
  authorization?: TemporalAuthorization,
  tls?: ClusterTls,
): Record<string, string | undefined> {
  return {
    PATH: process.env.PATH,
    // P6: one host, shared with the engines (ONE_HOST_GO_RUNTIME).
    ...oneHostGoRuntime(),
    TEMPORAL_PORT_BASE: String(portBase),
    TEMPORAL_BIND_ON_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    TEMPORAL_DB_HOST: db.host,
    TEMPORAL_DB_PORT: String(db.port),
    TEMPORAL_DB_USER: db.user,
    TEMPORAL_DB_PASSWORD: db.password ?? '',
    TEMPORAL_DB: db.database,
    TEMPORAL_VISIBILITY_DB: db.visibilityDatabase,
    TEMPORAL_DYNAMIC_CONFIG: join(root, TEMPORAL_CONFIG_DIR, 'dynamicconfig.yaml'),
    TEMPORAL_LOG_LEVEL: 'warn',
    // D14: fixed once the cluster has started (docs/deploy.md); a setting, small by default
    // on this one machine's clusters, which start fresh.
    TEMPORAL_HISTORY_SHARDS: process.env.TEMPORAL_HISTORY_SHARDS ?? '4',
    TEMPORAL_AUTH_KEY_SOURCE_URI: authorization?.keySourceUri ?? '',
    TEMPORAL_AUTH_PERMISSIONS_CLAIM: '',
    TEMPORAL_AUTH_AUDIENCE: authorization?.audience ?? '',
    // X7: TLS with client certificates on every service (deploy/temporal/server.yaml).
    TEMPORAL_SERVER_TLS_CERT: tls?.serverCert ?? '',
    TEMPORAL_SERVER_TLS_KEY: tls?.serverKey ?? '',
    TEMPORAL_SERVER_TLS_INTERNODE_CA: tls?.serverCa ?? '',
    TEMPORAL_SERVER_TLS_CLIENT_CA: tls?.clientCa ?? '',
    TEMPORAL_SERVER_TLS_NAME: tls?.serverName ?? '',
  };
}

export function temporalServerProcess(options: {
  root: string;
  db: TemporalDatabase;
  portBase: number;
  logFile: string;
  namespace: string;
  log: (line: string) => void;
  authorization?: TemporalAuthorization;
  /** X7: the server's certificates; its own opens the internal frontend for the set-up. */
  tls?: ClusterTls;
}): ManagedProcess {
  const { server } = findOrBuild('temporalServer', options.log);
  // The namespace and search attributes are the installation's own set-up: registered through
  // the internal frontend, which needs no token (R4).
  const address = internalFrontendAddress(options.portBase);
  return managedProcess({
    name: 'temporal',
    command: server as string,
    args: [
      '--root',
      options.root,
      '--config',
      TEMPORAL_CONFIG_DIR,
      '--env',
      'server',
      'start',
      ...TEMPORAL_SERVICES.flatMap((service) => ['--service', service]),
    ],
    env: temporalServerEnv(
      options.db,
      options.portBase,
      options.root,
      options.authorization,
      options.tls,
    ),
    cwd: options.root,
    logFile: options.logFile,
    ready: (exited) => registerNamespace(address, options.namespace, exited, options.tls),
  });
}

/**
 * Waits for the frontend, then registers the namespace and Quire's search attributes if the
 * cluster lacks them (a cluster keeps them in PostgreSQL across restarts).
 */
async function registerNamespace(
  address: string,
  namespace: string,
  exited: () => boolean,
  tls?: ClusterTls,
): Promise<void> {
  let connection: Connection | undefined;
  await pollReady(
    'the Temporal frontend',
    async () => {
      await connection?.close().catch(() => {});
      connection = await Connection.connect({
        address,
        connectTimeout: 2_000,
        ...(tls ? { tls: temporalTlsConfig(tls, 'internode') } : {}),
      });
      await connection.workflowService.getSystemInfo({});
      return true;
    },
    exited,
    120_000,
    500,
  );
  const conn = connection as Connection;
  try {
    await pollReady(
      `namespace ${namespace}`,
      async () => {
        try {
          await conn.workflowService.describeNamespace({ namespace });
          return true;
        } catch {
          await conn.workflowService
            .registerNamespace({
              namespace,
              workflowExecutionRetentionPeriod: msToTs('3 days'),
            })
            .catch((error: { code?: number }) => {
              // 6: already exists, registered by an earlier start.
              if (error.code !== 6) throw error;
            });
          return false;
        }
      },
      exited,
      60_000,
      500,
    );
    let added = false;
    await pollReady(
      'search attributes',
      async () => {
        const listed = await conn.operatorService.listSearchAttributes({ namespace });
        const custom = listed.customAttributes ?? {};
        const missing = Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !(name in custom));
        if (missing.length === 0) return true;
        const types = { Int: 3, Keyword: 2 } as const; // IndexedValueType
        await conn.operatorService.addSearchAttributes({
          namespace,
          searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, types[type]])),
        });
        added = true;
        return false;
      },
      exited,
      60_000,
      500,
    );
    // P6: the server's services read a namespace's search attributes from their namespace
    // cache (deploy/temporal/dynamicconfig.yaml), refreshed every 2 s: attributes just added
    // are used once every service has refreshed.
    if (added) await new Promise((resolve) => setTimeout(resolve, SEARCH_ATTRIBUTES_SETTLE_MS));
  } finally {
    await conn.close();
  }
}
