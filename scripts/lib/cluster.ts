import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { parseSettingsText, QUIRE_SETTING_NAMES } from '../../core/config';
import { migrate } from '../../db/migrate';
import { startTemporalToken } from '../../net/temporalToken';
import { WORKFLOWS_PATH } from '../../worker/createWorker';
import { clusterPasswords, ensureRoleDatabases, roleUrl } from './clusterDatabases';
import { type ClusterTls, ensureClusterTls, temporalTlsEnv } from './clusterTls';
import { findOrBuild } from './goBuilds';
import {
  type IdentityPerson,
  type IdentityProvider,
  startIdentityProvider,
} from './identityProvider';
import {
  type ObjectServerSettings,
  objectServerEndpoint,
  objectServerProcess,
} from './objectServer';
import { type PgInstance, pgInstance } from './pgInstance';
import { freePortRange, httpOk, type ManagedProcess, managedProcess, pollReady } from './processes';
import { freePort } from './temporal';
import {
  internalFrontendAddress,
  prepareTemporalSchema,
  type TemporalAuthorization,
  type TemporalDatabase,
  temporalServerProcess,
} from './temporalServer';
import { ensureWebBuild } from './webBuild';
import { workerArgs } from './workerBuild';

/**
 * Cluster mode (D2): the production topology on one machine. A PostgreSQL server of its own
 * (Quire's database and Temporal's two), the Temporal server on that PostgreSQL with SQL
 * visibility, the Temporal UI, an S3-compatible object server, N workers and M web replicas
 * on the console's production build. Every Quire process gets the same settings, the same
 * secret key, and reaches blobs only through the object server.
 * X7: the installation's own channels are its own: Temporal's services speak mTLS (the
 * internal frontend answers only the server's own certificate), Hydra's admin API is a Unix
 * socket of mode 0600, and every PostgreSQL role signs in with its password.
 */
export const CLUSTER_SETTINGS_FILE = 'deploy/quire.env';

export interface ClusterOptions {
  root: string;
  /** State and logs: PostgreSQL data, objects, the workflow bundle, one log per process. */
  dir: string;
  secretKey: string;
  workers: number;
  webReplicas: number;
  /** Web build directory under web/ (`.next` for `npm run start:cluster`). */
  webDistDir: string;
  /** Fixed ports (the command), or free ones (tests). */
  ports?: {
    postgres: number;
    temporalBase: number;
    ui: number;
    objectStore: number;
    web: number[];
  };
  ui?: boolean;
  /** R4 tests: more people at the identity provider beside the operator. */
  identityPeople?: IdentityPerson[];
  /** Tests: PostgreSQL without fsync. */
  fastPostgres?: boolean;
  /** Ctrl-C while starting: what started is stopped and the start rejects. */
  signal?: AbortSignal;
  /** Extra settings for every Quire process (tests: short timeouts, the simulated engine). */
  env?: Record<string, string>;
  log: (line: string) => void;
}

export interface Cluster {
  readonly postgres: PgInstance;
  readonly databaseUrl: string;
  /** X7: the roles' passwords (0600), the superuser's among them. */
  readonly passwordsFile: string;
  readonly temporalAddress: string;
  /** The internal frontend: the server's own services and the cluster's set-up (X7). */
  readonly temporalInternalAddress: string;
  /** X7: the certificates of the Temporal server and of its clients. */
  readonly temporalTls: ClusterTls;
  readonly uiUrl?: string;
  readonly objectStore: ObjectServerSettings & { endpoint: string };
  readonly temporal: ManagedProcess;
  readonly objectServer: ManagedProcess;
  readonly ui?: ManagedProcess;
  /** R4: the identity provider the Temporal UI and the console sign operators in with. */
  readonly identity?: {
    issuer: string;
    /** X7: Hydra's admin API, a Unix socket only the installation's user opens. */
    adminSocket: string;
    operator: { email: string; password: string };
  };
  readonly workers: ManagedProcess[];
  readonly webs: Array<ManagedProcess & { url: string }>;
  /** The settings every Quire process of the cluster gets (without per-process ones). */
  readonly quireEnv: Record<string, string>;
  /** One more worker, e.g. on another workflow bundle (D5). */
  addWorker(env?: Record<string, string>): Promise<ManagedProcess>;
  /** Everything stopped, PostgreSQL last. */
  stop(): Promise<void>;
}

/** KEY=value lines; `#` comments and blank lines skipped. */
export function readSettingsFile(path: string): Record<string, string> {
  return parseSettingsText(readFileSync(path, 'utf8'));
}

/**
 * D9: the settings the topology does not set itself, each handed to every Quire process: its
 * value from the settings file or the environment of the command, empty (unset) otherwise.
 * Not among them: what every process of the topology gets from the topology (below, and the
 * shared file), and what is each process's own (its health file, a settings file to read).
 */
const PROCESS_OWN = new Set([
  'QUIRE_ENV_FILE',
  'QUIRE_HEALTH_FILE',
  'QUIRE_BLOB_DIR',
  'QUIRE_SECRET_KEYS',
  'QUIRE_SECRET_KEY_FILE',
]);
export function passedSettingNames(shared: Record<string, string>): string[] {
  const topology = new Set(
    Object.keys(
      quireTopologyEnv({
        shared,
        databaseUrl: '',
        temporalAddress: '',
        uiUrl: '',
        publicUrl: '',
        secretKey: '',
        objectStore: { endpoint: '', accessKeyId: '', secretAccessKey: '' },
        workflowBundle: '',
      }),
    ),
  );
  return QUIRE_SETTING_NAMES.filter((name) => !topology.has(name) && !PROCESS_OWN.has(name));
}

/**
 * The environment of every Quire process of the topology, one list for cluster mode and
 * docker-compose.yml (whose `x-quire-env` and `env_file` name exactly these; a test checks).
 * `settings`: values for the passed settings (D9).
 */
export function quireProcessEnv(
  p: Parameters<typeof quireTopologyEnv>[0] & { settings?: Record<string, string | undefined> },
): Record<string, string> {
  const passed = Object.fromEntries(
    passedSettingNames(p.shared).map((name) => [name, p.settings?.[name] ?? '']),
  );
  return { ...passed, ...quireTopologyEnv(p) };
}

/** What the topology itself sets in every Quire process. */
function quireTopologyEnv(p: {
  shared: Record<string, string>;
  databaseUrl: string;
  temporalAddress: string;
  uiUrl: string;
  publicUrl: string;
  secretKey: string;
  objectStore: { endpoint: string; accessKeyId: string; secretAccessKey: string };
  workflowBundle: string;
}): Record<string, string> {
  return {
    ...p.shared,
    NODE_ENV: 'production',
    DATABASE_URL: p.databaseUrl,
    TEMPORAL_ADDRESS: p.temporalAddress,
    QUIRE_TEMPORAL_UI_URL: p.uiUrl,
    QUIRE_PUBLIC_URL: p.publicUrl,
    QUIRE_SECRET_KEY: p.secretKey,
    QUIRE_S3_ENDPOINT: p.objectStore.endpoint,
    QUIRE_S3_ACCESS_KEY_ID: p.objectStore.accessKeyId,
    QUIRE_S3_SECRET_ACCESS_KEY: p.objectStore.secretAccessKey,
    QUIRE_WORKFLOW_BUNDLE: p.workflowBundle,
    WORKER_CONCURRENCY: '2',
    LOG_LEVEL: 'info',
  };
}

/** R4: the cluster's operator at the identity provider, and the group that makes operators. */
export const CLUSTER_OPERATOR_EMAIL = 'operator@quire.localhost';
const OPERATOR_GROUP = 'operators';

/**
 * Hydra makes the key set that signs JWT access tokens at the first such token; the frontend
 * reads the keys once at start (then each minute), so one token is asked for first and its
 * key is seen published before Temporal starts.
 */
async function signingKeysReady(
  identity: IdentityProvider,
  client: { clientId: string; clientSecret: string },
): Promise<string> {
  const token = await startTemporalToken({
    TEMPORAL_OAUTH_TOKEN_URL: identity.tokenUrl,
    TEMPORAL_OAUTH_CLIENT_ID: client.clientId,
    TEMPORAL_OAUTH_CLIENT_SECRET: client.clientSecret,
  });
  const header = JSON.parse(
    Buffer.from(token?.current().split('.')[0] ?? '', 'base64url').toString() || '{}',
  ) as { kid?: string };
  token?.close();
  const keys = (await (await fetch(identity.jwksUrl)).json()) as { keys: Array<{ kid: string }> };
  if (!header.kid || !keys.keys.some((key) => key.kid === header.kid)) {
    throw new Error('the identity provider does not publish the key its access tokens carry');
  }
  return identity.jwksUrl;
}

async function choosePorts(): Promise<NonNullable<ClusterOptions['ports']>> {
  const base = await freePortRange(20);
  return {
    temporalBase: base,
    postgres: base + 10,
    ui: base + 11,
    objectStore: base + 12,
    web: [base + 13, base + 14, base + 15, base + 16],
  };
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const { root, dir } = options;
  // Every step announces itself here, so an abort takes effect between steps.
  const log = (line: string) => {
    options.signal?.throwIfAborted();
    options.log(line);
  };
  const ports = options.ports ?? (await choosePorts());
  const logFile = (name: string) => join(dir, 'logs', `${name}.log`);
  const started: ManagedProcess[] = [];
  // Builds first, before anything runs: minutes the first time, nothing once cached.
  findOrBuild('temporalServer', log);
  findOrBuild('objectServer', log);
  if (options.ui !== false) findOrBuild('temporalUi', log);

  const { file: passwordsFile, passwords } = clusterPasswords(dir);
  const temporalTls = ensureClusterTls(dir);
  const postgres = pgInstance({
    baseDir: dir,
    dataDir: join(dir, 'postgres', 'data'),
    port: ports.postgres,
    logFile: join(dir, 'postgres', 'log', 'postgres.log'),
    fast: options.fastPostgres,
    superuserPassword: passwords.postgres,
  });
  let identity: IdentityProvider | undefined;
  let identityOperator: { email: string; password: string } | undefined;
  const stopAll = async () => {
    for (const process of [...started].reverse()) await process.stop(20_000).catch(() => {});
    await identity?.stop().catch(() => {});
    postgres.stop('fast');
  };
  try {
    log(`starting PostgreSQL on :${ports.postgres} (data in ${join(dir, 'postgres')})...`);
    postgres.start();
    const superuser = postgres.url('postgres');
    await ensureRoleDatabases(superuser, 'quire', passwords.quire, ['quire']);
    await ensureRoleDatabases(superuser, 'temporal', passwords.temporal, [
      'temporal',
      'temporal_visibility',
    ]);
    const databaseUrl = roleUrl(postgres.port, 'quire', passwords.quire, 'quire');
    await migrate(databaseUrl);

    const objectStore: ObjectServerSettings & { endpoint: string } = (() => {
      const credentialsFile = join(dir, 'object-store-credentials.json');
      if (!existsSync(credentialsFile)) {
        const random = () =>
          Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString('hex');
        writeFileSync(
          credentialsFile,
          JSON.stringify({
            accessKeyId: `quire${random().slice(0, 12)}`,
            secretAccessKey: random(),
          }),
          { mode: 0o600 },
        );
      }
      const credentials = JSON.parse(readFileSync(credentialsFile, 'utf8'));
      const shared = readSettingsFile(join(root, CLUSTER_SETTINGS_FILE));
      const settings: ObjectServerSettings = {
        port: ports.objectStore,
        dataDir: join(dir, 'objects'),
        accessKeyId: credentials.accessKeyId,
        secretAccessKey: credentials.secretAccessKey,
        region: shared.QUIRE_S3_REGION ?? 'us-east-1',
        bucket: shared.QUIRE_S3_BUCKET ?? 'quire',
      };
      return { ...settings, endpoint: objectServerEndpoint(settings) };
    })();
    log(`starting the object server on :${ports.objectStore}...`);
    const objectServer = objectServerProcess(objectStore, logFile('object-store'), log);
    started.push(objectServer);
    await objectServer.start();

    const shared = readSettingsFile(join(root, CLUSTER_SETTINGS_FILE));
    let ui: ManagedProcess | undefined;
    const uiUrl = `http://localhost:${ports.ui}`;
    let authorization: TemporalAuthorization | undefined;
    let identityEnv: Record<string, string> = {};
    const uiAuthEnv: Record<string, string> = {};
    if (options.ui !== false) {
      // R4: the Temporal UI is the operators', behind its own OpenID Connect login against the
      // installation's provider; here a development Hydra with one operator (its password kept
      // in the cluster directory), which the console's single sign-on uses too (R2). It starts
      // before Temporal, whose frontend reads the provider's keys at start to check tokens.
      await ensureRoleDatabases(superuser, 'hydra', passwords.hydra, ['hydra']);
      const operatorFile = join(dir, 'identity-operator.json');
      if (!existsSync(operatorFile)) {
        writeFileSync(
          operatorFile,
          JSON.stringify({
            email: CLUSTER_OPERATOR_EMAIL,
            password: Buffer.from(crypto.getRandomValues(new Uint8Array(12))).toString('base64url'),
          }),
          { mode: 0o600 },
        );
      }
      const operator = JSON.parse(readFileSync(operatorFile, 'utf8'));
      const dsn = new URL(roleUrl(postgres.port, 'hydra', passwords.hydra, 'hydra'));
      dsn.searchParams.set('sslmode', 'disable');
      log('starting the identity provider (Ory Hydra) for the operators...');
      // X7: its admin API on a socket of mode 0600 in a directory others may pass, not list.
      const runDir = join(dir, 'run');
      mkdirSync(runDir, { recursive: true, mode: 0o711 });
      identity = await startIdentityProvider({
        dsn: dsn.toString(),
        publicPort: await freePort(),
        adminSocket: join(runDir, 'hydra-admin.sock'),
        people: [
          { ...operator, name: 'Cluster operator', groups: [OPERATOR_GROUP] },
          ...(options.identityPeople ?? []),
        ],
        logFile: logFile('hydra'),
        log,
        // Operators administer the orchestration layer; nobody else gets any permission, so
        // anyone else the provider signs in at the UI is refused by the frontend.
        temporalPermissionsByGroup: { [OPERATOR_GROUP]: ['temporal-system:admin'] },
      });
      identityOperator = operator;
      const discovered = (await (
        await fetch(`${identity.issuer}/.well-known/openid-configuration`)
      ).json()) as { issuer: string };
      const uiClient = await identity.registerClient({
        redirectUris: [`${uiUrl}/auth/sso/callback`],
        temporal: true,
      });
      // Quire's workers and web replicas: their own client, writers of the namespace only.
      const serviceClient = await identity.registerServiceClient({
        permissions: [`${shared.TEMPORAL_NAMESPACE ?? 'default'}:write`],
      });
      authorization = { keySourceUri: await signingKeysReady(identity, serviceClient) };
      const consoleClient = await identity.registerClient({
        redirectUris: ports.web.map((port) => `http://localhost:${port}/signin/oidc/callback`),
      });
      Object.assign(uiAuthEnv, {
        TEMPORAL_AUTH_ENABLED: 'true',
        TEMPORAL_AUTH_PROVIDER_URL: discovered.issuer,
        TEMPORAL_AUTH_ISSUER_URL: discovered.issuer,
        TEMPORAL_AUTH_CLIENT_ID: uiClient.clientId,
        TEMPORAL_AUTH_CLIENT_SECRET: uiClient.clientSecret,
        TEMPORAL_AUTH_CALLBACK_URL: `${uiUrl}/auth/sso/callback`,
        TEMPORAL_AUTH_LABEL: 'Operators sign in',
        // Plain http on the loopback: the UI's CSRF cookie cannot be Secure here.
        TEMPORAL_CSRF_COOKIE_INSECURE: 'true',
        ...(shared.TEMPORAL_UI_WRITE_ACTIONS
          ? { TEMPORAL_UI_WRITE_ACTIONS: shared.TEMPORAL_UI_WRITE_ACTIONS }
          : {}),
      });
      identityEnv = {
        QUIRE_OIDC_ISSUER: discovered.issuer,
        QUIRE_OIDC_CLIENT_ID: consoleClient.clientId,
        QUIRE_OIDC_CLIENT_SECRET: consoleClient.clientSecret,
        QUIRE_OIDC_ROLE_MAPPING: JSON.stringify({ operators: [OPERATOR_GROUP] }),
        TEMPORAL_OAUTH_TOKEN_URL: identity.tokenUrl,
        TEMPORAL_OAUTH_CLIENT_ID: serviceClient.clientId,
        TEMPORAL_OAUTH_CLIENT_SECRET: serviceClient.clientSecret,
      };
    }

    const temporalDb: TemporalDatabase = {
      host: '127.0.0.1',
      port: ports.postgres,
      user: 'temporal',
      password: passwords.temporal,
      database: 'temporal',
      visibilityDatabase: 'temporal_visibility',
    };
    log('preparing the Temporal schema (sql tool: setup-schema, update-schema)...');
    prepareTemporalSchema(temporalDb, log);
    const temporalAddress = `127.0.0.1:${ports.temporalBase}`;
    const namespace = shared.TEMPORAL_NAMESPACE ?? 'default';
    log(
      `starting the Temporal server on ${temporalAddress} (PostgreSQL persistence and visibility)...`,
    );
    const temporal = temporalServerProcess({
      root,
      db: temporalDb,
      portBase: ports.temporalBase,
      logFile: logFile('temporal'),
      namespace,
      log,
      authorization,
      tls: temporalTls,
    });
    started.push(temporal);
    await temporal.start();

    if (options.ui !== false) {
      const { server } = findOrBuild('temporalUi', log);
      ui = managedProcess({
        name: 'temporal-ui',
        command: server as string,
        args: ['--root', root, '--config', 'deploy/temporal', '--env', 'ui', 'start'],
        env: {
          PATH: process.env.PATH,
          TEMPORAL_ADDRESS: temporalAddress,
          TEMPORAL_UI_PORT: String(ports.ui),
          TEMPORAL_CORS_ORIGINS: `http://localhost:${ports.web[0]}`,
          // X7: the frontend asks the UI for its certificate.
          TEMPORAL_TLS_CA: temporalTls.serverCa,
          TEMPORAL_TLS_CERT: temporalTls.uiCert,
          TEMPORAL_TLS_KEY: temporalTls.uiKey,
          TEMPORAL_TLS_SERVER_NAME: temporalTls.serverName,
          ...uiAuthEnv,
        },
        cwd: root,
        logFile: logFile('temporal-ui'),
        ready: (exited) =>
          pollReady(
            'the Temporal UI',
            () => httpOk(`http://127.0.0.1:${ports.ui}/`),
            exited,
            60_000,
          ),
      });
      started.push(ui);
      await ui.start();
    }

    const bundlePath = join(dir, 'workflow-bundle.js');
    log('bundling the workflows once for every worker...');
    const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quiet });
    writeFileSync(bundlePath, code);

    const quireEnv = {
      ...quireProcessEnv({
        shared,
        databaseUrl,
        temporalAddress,
        uiUrl,
        publicUrl: `http://localhost:${ports.web[0]}`,
        secretKey: options.secretKey,
        objectStore,
        workflowBundle: bundlePath,
      }),
      ...identityEnv,
      // X7: Quire's processes (and the admin CLI with these settings) present its certificate.
      ...temporalTlsEnv(temporalTls),
      ...options.env,
    };
    // D9: each process gets every setting in its environment (scripts/cluster.ts read the
    // settings file once for all of them), so none reads a settings file of its own.
    const baseEnv = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      QUIRE_ENV_FILE: '',
    };

    const workers: ManagedProcess[] = [];
    const addWorker = async (env: Record<string, string> = {}) => {
      const index = workers.length + 1;
      const healthFile = join(dir, `worker-${index}-health.json`);
      const worker = managedProcess({
        name: `worker-${index}`,
        command: process.execPath,
        args: workerArgs(root),
        env: { ...baseEnv, ...quireEnv, QUIRE_HEALTH_FILE: healthFile, ...env },
        cwd: root,
        logFile: logFile(`worker-${index}`),
        ready: (exited) => {
          const since = Date.now();
          return pollReady(
            `worker-${index}`,
            async () => existsSync(healthFile) && statSync(healthFile).mtimeMs >= since - 1_000,
            exited,
            120_000,
          );
        },
      });
      workers.push(worker);
      started.push(worker);
      await worker.start();
      return worker;
    };
    log(`building the console if its sources changed (web/${options.webDistDir})...`);
    const webBuild =
      options.webReplicas > 0
        ? ensureWebBuild(root, options.webDistDir, log, logFile('next-build'))
        : Promise.resolve();
    log(`starting ${options.workers} workers...`);
    // Workers start one after another: the first one migrates and creates the schedules.
    for (let i = 0; i < options.workers; i++) await addWorker();
    await webBuild;

    const webs: Array<ManagedProcess & { url: string }> = [];
    log(`starting ${options.webReplicas} web replicas...`);
    options.signal?.throwIfAborted();
    await Promise.all(
      Array.from({ length: options.webReplicas }, async (_, i) => {
        const port = ports.web[i] as number;
        const web = Object.assign(
          managedProcess({
            name: `web-${i + 1}`,
            command: process.execPath,
            args: [
              join(root, 'node_modules/next/dist/bin/next'),
              'start',
              'web',
              '-p',
              String(port),
              '-H',
              '127.0.0.1',
            ],
            env: {
              ...baseEnv,
              ...quireEnv,
              QUIRE_NEXT_DIST_DIR: options.webDistDir,
              NEXT_TELEMETRY_DISABLED: '1',
            },
            cwd: root,
            logFile: logFile(`web-${i + 1}`),
            ready: (exited) =>
              pollReady(
                `web-${i + 1}`,
                () => httpOk(`http://127.0.0.1:${port}/readyz`),
                exited,
                120_000,
              ),
          }),
          { url: `http://127.0.0.1:${port}` },
        );
        webs[i] = web;
        started.push(web);
        await web.start();
      }),
    );

    options.signal?.throwIfAborted();
    return {
      postgres,
      databaseUrl,
      passwordsFile,
      temporalAddress,
      temporalInternalAddress: internalFrontendAddress(ports.temporalBase),
      temporalTls,
      uiUrl: ui ? uiUrl : undefined,
      identity:
        identity && identityOperator
          ? {
              issuer: identity.issuer,
              adminSocket: identity.adminSocket,
              operator: identityOperator,
            }
          : undefined,
      objectStore,
      temporal,
      objectServer,
      ui,
      workers,
      webs,
      quireEnv,
      addWorker,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

const quiet = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: (message: string) => console.error(message),
};
