import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';
import { PEOPLE_SETTINGS } from './peopleSettings';
import { AUTO_PROVIDER, describeProvider, enabledProviders } from './providerCatalogue';
import { MIN_SECRET_KEY_LENGTH, parseKeyList } from './secretKeys';
import { intFrom, trimmedOptional } from './settingKinds';
import {
  DEFAULT_TASK_QUEUE,
  JOB_DEFAULTS,
  type JobSettings,
  MAINTENANCE_TASK_QUEUE,
} from './temporal';

/**
 * The one typed configuration of Quire, read from the environment and validated at start.
 * Defaults run on a laptop: local Postgres, the Temporal dev server, blobs under `.data/`.
 */

/**
 * D1: where `npm start` keeps the key it generates outside production, and where every other
 * process of the same checkout finds it when no key is set, so one more `npm run worker`
 * joins the running stack with the same key. Relative to the working directory (the
 * repository root for every npm script).
 */
export const LOCAL_SECRET_KEY_FILE = '.data/dev-secret';

/** Base of canvas URIs when none is configured: the console on a laptop. */
export const DEFAULT_PUBLIC_URL = 'http://localhost:3000';

/** Per-call timeout of every remote engine call unless configured (Q2). */
export const DEFAULT_PROVIDER_TIMEOUT_MS = 240_000;
/** Where the local engines look for their programs when no PATH is set. */
export const DEFAULT_PROGRAM_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * A remote engine's base URL (Q2): http or https, without credentials (they belong in its
 * `_API_KEY` setting), query or fragment; trailing slashes dropped. Messages never echo the
 * value, which may carry a key pasted by mistake.
 */
const engineBaseUrl = trimmedOptional.transform((raw, ctx) => {
  if (raw === undefined) return undefined;
  const refuse = (message: string) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return refuse('must be http or https');
  if (url.username || url.password)
    return refuse('must not carry credentials; use the _API_KEY variable');
  if (url.search || url.hash) return refuse('must not have a query or fragment');
  return url.toString().replace(/\/+$/, '');
});

/** Digits only (no sign, exponent or hex), so a typo is refused rather than read as a number. */
const providerTimeoutMs = trimmedOptional.transform((raw, ctx) => {
  if (raw === undefined) return DEFAULT_PROVIDER_TIMEOUT_MS;
  const ms = Number(raw);
  if (!/^\d+$/.test(raw) || ms < 1 || ms > 3_600_000) {
    ctx.addIssue({ code: 'custom', message: 'must be an integer between 1 and 3600000' });
    return z.NEVER;
  }
  return ms;
});

const schema = z.object({
  NODE_ENV: z.string().default('development'),
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/quire'),
  DATABASE_POOL_SIZE: intFrom(1, 100, 10),
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  // D2: a Temporal deployment beyond the loopback (Temporal Cloud, a self-hosted cluster with
  // mTLS), under the names Temporal's own clients read. An API key implies TLS; never logged.
  TEMPORAL_API_KEY: trimmedOptional,
  /** `true`: TLS with the system's roots; unset: TLS when any setting below or an API key is set. */
  TEMPORAL_TLS: z.enum(['true', 'false']).optional(),
  TEMPORAL_TLS_CLIENT_CERT_PATH: trimmedOptional,
  TEMPORAL_TLS_CLIENT_KEY_PATH: trimmedOptional,
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: trimmedOptional,
  TEMPORAL_TLS_SERVER_NAME: trimmedOptional,
  // R4: a frontend that checks callers' JWTs (an authorizer, docs/deploy.md) is reached with a
  // token from the installation's identity provider: the OAuth 2.0 client-credentials grant of
  // Quire's own client, refreshed before it expires. The secret is never logged.
  TEMPORAL_OAUTH_TOKEN_URL: z.string().url().optional(),
  TEMPORAL_OAUTH_CLIENT_ID: trimmedOptional,
  TEMPORAL_OAUTH_CLIENT_SECRET: trimmedOptional,
  /** Space-separated scopes to ask for, where the provider wants some. */
  TEMPORAL_OAUTH_SCOPE: trimmedOptional,
  /** The audience to ask for, where the frontend checks one (its `authorization.audience`). */
  TEMPORAL_OAUTH_AUDIENCE: trimmedOptional,
  QUIRE_TASK_QUEUE: z.string().min(1).default(DEFAULT_TASK_QUEUE),
  QUIRE_MAINTENANCE_TASK_QUEUE: z.string().min(1).default(MAINTENANCE_TASK_QUEUE),
  QUIRE_TEMPORAL_UI_URL: z.string().url().default('http://localhost:8233'),
  /** O1, P2: activity slots per worker; default twice the engine threads, so engines never wait for work. */
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(16).optional(),
  /** P2: OCR engine processes or threads per worker process; default one per core. */
  QUIRE_ENGINE_THREADS: z.coerce.number().int().min(1).max(64).optional(),
  /** P3: `auto` (the native binary when installed, else tesseract.js), `native` or `js`. */
  QUIRE_TESSERACT_ENGINE: z.enum(['auto', 'native', 'js']).default('auto'),
  QUIRE_SHUTDOWN_GRACE_MS: intFrom(0, 3_600_000, 30_000),
  QUIRE_HEARTBEAT_TIMEOUT_MS: intFrom(1_000, 600_000, JOB_DEFAULTS.heartbeatTimeoutMs),
  /**
   * D7: how long a finished engine read waits (heartbeating) for Quire's own PostgreSQL or
   * object store to answer before its step gives up; a managed database's failover takes one
   * to two minutes. The step given up is run again, uncharged, once the dependency is back.
   */
  QUIRE_INFRA_WAIT_MS: intFrom(0, 3_600_000, 180_000),
  /**
   * D7: bounds on every call to Quire's own services, so that one that stops answering (a
   * frozen network path, a failover that black-holes open connections) fails the call in
   * time, as an outage, instead of holding it for ever. PostgreSQL: opening a connection, and
   * one statement (client side, and `statement_timeout` on the server); TCP keepalives find a
   * dead idle connection. Object store: opening a connection, and a request's socket silent
   * this long (a transfer that keeps moving is never cut). Temporal: opening the connection.
   */
  QUIRE_DB_CONNECT_TIMEOUT_MS: intFrom(100, 600_000, 10_000),
  QUIRE_DB_QUERY_TIMEOUT_MS: intFrom(100, 3_600_000, 60_000),
  QUIRE_DB_KEEPALIVE_MS: intFrom(1_000, 3_600_000, 10_000),
  QUIRE_S3_CONNECT_TIMEOUT_MS: intFrom(100, 600_000, 10_000),
  QUIRE_S3_SOCKET_TIMEOUT_MS: intFrom(100, 3_600_000, 30_000),
  QUIRE_TEMPORAL_CONNECT_TIMEOUT_MS: intFrom(100, 600_000, 10_000),
  /** Prebuilt workflow bundle (tests, container images); bundled at start when unset. */
  QUIRE_WORKFLOW_BUNDLE: z.string().optional(),
  /** How long a cached workflow waits for its own worker before any worker may take it. */
  QUIRE_STICKY_TIMEOUT_MS: intFrom(1_000, 600_000, 3_000),
  QUIRE_HEALTH_FILE: z.string().default('.data/worker-health.json'),
  QUIRE_HEALTH_MAX_AGE_MS: intFrom(1_000, 3_600_000, 60_000),
  QUIRE_MAX_ATTEMPTS: intFrom(1, 100, JOB_DEFAULTS.maxAttempts),
  QUIRE_POLISH_ATTEMPTS: intFrom(0, 100, JOB_DEFAULTS.polishAttempts),
  QUIRE_RETRY_INITIAL_MS: intFrom(1, 3_600_000, JOB_DEFAULTS.retryInitialMs),
  /** How long one recognize activity runs before the workflow hears of its progress. */
  QUIRE_RECOGNIZE_SLICE_MS: intFrom(100, 600_000, JOB_DEFAULTS.recognizeSliceMs),
  QUIRE_RETRY_MAX_MS: intFrom(1, 86_400_000, JOB_DEFAULTS.retryMaxMs),
  QUIRE_RECONCILE_AFTER_MS: intFrom(1_000, 86_400_000, 60_000),
  /** A provider name, or `auto`: tesseract for images, pocketsphinx for audio. */
  QUIRE_DEFAULT_PROVIDER: z.string().default('auto'),
  QUIRE_BLOB_DIR: z.string().default('.data/blobs'),
  /** U1/D2: `local` (QUIRE_BLOB_DIR) or `s3` (an S3-compatible bucket shared by every process). */
  QUIRE_BLOB_STORE: z.enum(['local', 's3']).default('local'),
  /** S3-compatible endpoint (http or https); unset: the provider's default for the region. */
  QUIRE_S3_ENDPOINT: engineBaseUrl,
  QUIRE_S3_BUCKET: trimmedOptional,
  QUIRE_S3_REGION: z.string().min(1).default('us-east-1'),
  /** Key prefix inside the bucket, e.g. `quire/`; empty by default. */
  QUIRE_S3_PREFIX: z
    .string()
    .regex(/^([A-Za-z0-9._-]+\/)*$/, 'must be segments ending in a slash, e.g. quire/')
    .default(''),
  /** Unset: the SDK's own chain (environment, profile, instance role). Never logged. */
  QUIRE_S3_ACCESS_KEY_ID: trimmedOptional,
  QUIRE_S3_SECRET_ACCESS_KEY: trimmedOptional,
  /** Path-style addressing (`endpoint/bucket/key`), which most self-hosted servers need. */
  QUIRE_S3_FORCE_PATH_STYLE: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  /**
   * D13: megabytes a process's copies of S3 objects (engine inputs, derivatives the Image API
   * reads) may take on its disk; the least recently used go beyond it.
   */
  QUIRE_BLOB_CACHE_MAX_MB: intFrom(16, 1_048_576, 2048),
  /** Base of canvas URIs and links in events. */
  QUIRE_PUBLIC_URL: z.string().url().default(DEFAULT_PUBLIC_URL),
  /**
   * D14: how many bulk jobs may have an open workflow at once, installation-wide; the rest of a
   * large batch waits in PostgreSQL (`awaiting_slot`) and is admitted, oldest first, as jobs
   * end. Unset: every job starts its workflow when recorded. A person's page is never held.
   */
  QUIRE_FLEET_MAX_OPEN_WORKFLOWS: z.coerce.number().int().min(1).max(10_000_000).optional(),
  /** Bytes all workspaces may store together (U2); unset: no global quota. */
  QUIRE_GLOBAL_QUOTA_BYTES: z.coerce.number().int().positive().optional(),
  /** I5: the resolution PDF pages are rendered at when a PDF is uploaded. */
  QUIRE_PDF_DPI: intFrom(36, 1200, 300),
  /** F8: host names (or host:port) a IIIF import may fetch from despite resolving to loopback or private ranges; development and tests only. */
  QUIRE_IIIF_ALLOW_HOSTS: z.string().optional(),
  /** F8: the longest side of an image fetched through a manifest's Image API service. */
  QUIRE_IIIF_IMAGE_MAX_SIDE: intFrom(64, 65_000, 4000),
  /** F8: canvases one imported manifest may have. */
  QUIRE_IIIF_MAX_CANVASES: intFrom(1, 5000, 1000),
  /** F8: bytes of a manifest or a transcription it names. */
  QUIRE_IIIF_MAX_DOCUMENT_BYTES: intFrom(1024, 256 * 1024 * 1024, 16 * 1024 * 1024),
  /** F8: bytes of one fetched image. */
  QUIRE_IIIF_MAX_IMAGE_BYTES: intFrom(1024, 1024 * 1024 * 1024, 100 * 1024 * 1024),
  /** F8: time one fetch of an import may take, connection to last byte. */
  QUIRE_IIIF_FETCH_TIMEOUT_MS: intFrom(100, 600_000, 30_000),
  /** D1: the key that seals; with QUIRE_SECRET_KEYS, it must be that list's first. */
  QUIRE_SECRET_KEY: z.string().optional(),
  /** D1: rotation: keys newest first, comma-separated; the first seals, every one opens. */
  QUIRE_SECRET_KEYS: z.string().optional(),
  /** D1: a file holding the key(s), one per line, newest first (container secrets). */
  QUIRE_SECRET_KEY_FILE: z.string().optional(),
  /** Q4: where the first pause of an episode is announced (fixed text: provider and reason). */
  QUIRE_NOTIFY_URL: z.string().url().optional(),
  /** B1: price overrides, JSON `{"provider": {"unit": micros}}`. */
  QUIRE_PRICES: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (!value) return undefined;
      try {
        return JSON.parse(value) as Record<string, Partial<Record<string, number>>>;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'QUIRE_PRICES must be JSON' });
        return z.NEVER;
      }
    }),
  /** E3: where published AnnotationPages are mirrored (HTTP PUT of `<url>/<pageId>`). */
  QUIRE_MIRROR_URL: z.string().url().optional(),
  /** W1: host names (or host:port) allowed despite resolving to loopback or private ranges; development only. */
  QUIRE_WEBHOOK_ALLOW_HOSTS: z.string().optional(),
  /** S1, the event stream of the web app: open streams per API key, and its timers. */
  QUIRE_SSE_MAX_STREAMS_PER_KEY: intFrom(1, 10_000, 10),
  /** S1: open streams of one workspace, every key and console session together. */
  QUIRE_SSE_MAX_STREAMS_PER_WORKSPACE: intFrom(1, 100_000, 100),
  /** S1: the console's change streams per signed-in key (every tab holds one or two). */
  QUIRE_CONSOLE_MAX_STREAMS_PER_KEY: intFrom(1, 10_000, 16),
  /** S1: how long a stream slot outlives its replica (slots are counted in PostgreSQL). */
  QUIRE_SSE_LEASE_MS: intFrom(1_000, 600_000, 30_000),
  QUIRE_SSE_HEARTBEAT_MS: intFrom(100, 300_000, 15_000),
  QUIRE_SSE_CHECKPOINT_MS: intFrom(0, 300_000, 1_000),
  QUIRE_SSE_POLL_MS: intFrom(50, 300_000, 2_000),
  /** X3: how often an open stream re-checks the key or session that opened it. */
  QUIRE_STREAM_RECHECK_MS: intFrom(100, 60_000, 2_000),
  /** O3: events and finished deliveries older than this are removed. */
  QUIRE_EVENT_RETENTION_DAYS: intFrom(1, 3650, 30),
  /**
   * D11: months of the provider-call ledger wholly older than this are dropped. At least two
   * days, so today's and yesterday's spend (the daily budgets, B1) are always there.
   */
  QUIRE_PROVIDER_CALL_RETENTION_DAYS: intFrom(2, 36500, 400),
  /**
   * M2: registers the simulated engine (fault injection, set latency) and lets jobs ask for
   * it. Tests and benchmarks set `1`; `npm start` and production never do, so no request can
   * reach fault injection on a real installation.
   */
  QUIRE_ENABLE_SIMULATED: z
    .enum(['0', '1', 'false', 'true'])
    .default('0')
    .transform((value) => value === '1' || value === 'true'),
  /** Diagnostic: the simulated provider appends one line per call here (chaos tests). */
  QUIRE_SIMULATED_CALL_LOG: z.string().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  ...PEOPLE_SETTINGS,

  // --- Engines: read by providers/catalogue.ts, described per provider in
  // core/providerCatalogue.ts. A remote engine is registered when its base URL is set.
  /** Directory of extra `<lang>.traineddata` files for tesseract; `eng` is bundled. */
  QUIRE_TESSDATA_DIR: z.string().optional(),
  /** Where pocketsphinx keeps its engine jobs; default os.tmpdir()/quire-pocketsphinx. */
  QUIRE_POCKETSPHINX_DIR: z.string().optional(),
  /** Where the local engines look for their programs (sox, pocketsphinx_continuous). */
  PATH: z.string().default(DEFAULT_PROGRAM_PATH),
  /** OpenAI-compatible chat/vision, without `/v1`. */
  QUIRE_OPENAI_BASE_URL: engineBaseUrl,
  QUIRE_OPENAI_API_KEY: trimmedOptional,
  QUIRE_OPENAI_MODEL: trimmedOptional.transform((value) => value ?? 'gpt-4o-mini'),
  /** OpenAI-compatible audio transcription, without `/v1`. */
  QUIRE_WHISPER_BASE_URL: engineBaseUrl,
  /** Local servers need none. */
  QUIRE_WHISPER_API_KEY: trimmedOptional,
  QUIRE_WHISPER_MODEL: trimmedOptional.transform((value) => value ?? 'whisper-1'),
  /** Where whisper's engine jobs live; default under os.tmpdir(). */
  QUIRE_WHISPER_DIR: trimmedOptional,
  /** A generic asynchronous speech-job API. */
  QUIRE_ASYNC_SPEECH_BASE_URL: engineBaseUrl,
  QUIRE_ASYNC_SPEECH_API_KEY: trimmedOptional,
  /** Sent as `model` when set. */
  QUIRE_ASYNC_SPEECH_MODEL: trimmedOptional,
  /** Per-call timeout of every remote engine call. */
  QUIRE_PROVIDER_TIMEOUT_MS: providerTimeoutMs,
});

export type QuireConfig = Omit<
  z.infer<typeof schema>,
  | 'QUIRE_SECRET_KEY'
  | 'QUIRE_SECRET_KEYS'
  | 'QUIRE_SECRET_KEY_FILE'
  | 'WORKER_CONCURRENCY'
  | 'QUIRE_ENGINE_THREADS'
> & {
  WORKER_CONCURRENCY: number;
  QUIRE_ENGINE_THREADS: number;
  /**
   * Seals attempt tokens, signs sessions and page tokens, encrypts webhook secrets. Never
   * logged. Empty when no key is configured: processes that seal or open anything call
   * `requireSecretKeys` at start and refuse to run (there is no built-in fallback key).
   */
  QUIRE_SECRET_KEY: string;
  /** D1: every key that opens, newest first; the first is QUIRE_SECRET_KEY. */
  QUIRE_SECRET_KEYS: readonly string[];
  /** Where the keys came from (`QUIRE_SECRET_KEY`, `QUIRE_SECRET_KEYS` or a file path); never the keys. */
  secretKeySource: string | null;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** How configuration reads a key file; `loadConfig` passes the file system, tests their own. */
export interface ConfigFiles {
  readFile(path: string): string | undefined;
}

function secretKeysOf(
  env: Record<string, string | undefined>,
  production: boolean,
  files: ConfigFiles | undefined,
): { keys: string[]; source: string | null } {
  const single = env.QUIRE_SECRET_KEY?.trim() || undefined;
  const list = env.QUIRE_SECRET_KEYS ? parseKeyList(env.QUIRE_SECRET_KEYS) : [];
  let keys: string[];
  let source: string | null;
  if (list.length > 0) {
    if (single !== undefined && single !== list[0]) {
      throw new ConfigError(
        'QUIRE_SECRET_KEY differs from the first key of QUIRE_SECRET_KEYS: set only QUIRE_SECRET_KEYS (newest first)',
      );
    }
    keys = list;
    source = 'QUIRE_SECRET_KEYS';
  } else if (single !== undefined) {
    keys = [single];
    source = 'QUIRE_SECRET_KEY';
  } else {
    // Outside production the key `npm start` generated is the default; in production only
    // an explicit file.
    const path = env.QUIRE_SECRET_KEY_FILE || (production ? undefined : LOCAL_SECRET_KEY_FILE);
    const content = path ? files?.readFile(path) : undefined;
    if (env.QUIRE_SECRET_KEY_FILE && content === undefined) {
      throw new ConfigError(`QUIRE_SECRET_KEY_FILE: cannot read ${env.QUIRE_SECRET_KEY_FILE}`);
    }
    keys = content === undefined ? [] : parseKeyList(content);
    source = keys.length > 0 ? (path ?? null) : null;
  }
  if (keys.some((key) => key.length < MIN_SECRET_KEY_LENGTH)) {
    // Never the key itself in the message.
    throw new ConfigError(
      `${source}: every secret key must be ${MIN_SECRET_KEY_LENGTH} characters or more (e.g. openssl rand -hex 32)`,
    );
  }
  if (new Set(keys).size !== keys.length) {
    throw new ConfigError(`${source}: a secret key is listed twice`);
  }
  if (keys.length === 0 && production) {
    throw new ConfigError(
      'QUIRE_SECRET_KEY must be set (32 characters or more) in production, or QUIRE_SECRET_KEYS, or QUIRE_SECRET_KEY_FILE',
    );
  }
  return { keys, source };
}

/**
 * D1: the keys of a process that seals or opens anything (worker, web, relay), or a
 * `ConfigError` naming the variable. There is no built-in key to fall back on: a public
 * constant would let anyone forge sessions and open sealed secrets.
 */
/** The job settings this process gives every workflow it starts (T1, J3). */
export function jobSettingsOf(config: QuireConfig): JobSettings {
  return {
    maxAttempts: config.QUIRE_MAX_ATTEMPTS,
    polishAttempts: config.QUIRE_POLISH_ATTEMPTS,
    retryInitialMs: config.QUIRE_RETRY_INITIAL_MS,
    retryMaxMs: config.QUIRE_RETRY_MAX_MS,
    heartbeatTimeoutMs: config.QUIRE_HEARTBEAT_TIMEOUT_MS,
    recognizeSliceMs: config.QUIRE_RECOGNIZE_SLICE_MS,
  };
}

export function requireSecretKeys(config: QuireConfig): readonly string[] {
  if (config.QUIRE_SECRET_KEYS.length === 0) {
    throw new ConfigError(
      `QUIRE_SECRET_KEY is not set and ${LOCAL_SECRET_KEY_FILE} does not exist: set QUIRE_SECRET_KEY to the key of the running stack (32 characters or more), or start the stack once with \`npm start\`, which generates one there`,
    );
  }
  return config.QUIRE_SECRET_KEYS;
}

/**
 * Parses configuration from an environment object; pure, so tests can pass their own. `cores`
 * sizes the engine defaults (P2), the machine's own count unless given; `files` reads key
 * files (D1), none unless given.
 */
export function parseConfig(
  env: Record<string, string | undefined>,
  machine: { cores?: number; files?: ConfigFiles } = {},
): QuireConfig {
  const cleaned = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value !== ''),
  );
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const {
    QUIRE_SECRET_KEY: _single,
    QUIRE_SECRET_KEYS: _list,
    QUIRE_SECRET_KEY_FILE: _file,
    ...config
  } = parsed.data;
  const secrets = secretKeysOf(cleaned, config.NODE_ENV === 'production', machine.files);
  if (config.QUIRE_BLOB_STORE === 's3' && !config.QUIRE_S3_BUCKET) {
    throw new ConfigError('QUIRE_S3_BUCKET must be set when QUIRE_BLOB_STORE=s3');
  }
  if (Boolean(config.QUIRE_S3_ACCESS_KEY_ID) !== Boolean(config.QUIRE_S3_SECRET_ACCESS_KEY)) {
    throw new ConfigError(
      'QUIRE_S3_ACCESS_KEY_ID and QUIRE_S3_SECRET_ACCESS_KEY are set together or not at all',
    );
  }
  if (
    Boolean(config.TEMPORAL_TLS_CLIENT_CERT_PATH) !== Boolean(config.TEMPORAL_TLS_CLIENT_KEY_PATH)
  ) {
    throw new ConfigError(
      'TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH are set together or not at all',
    );
  }
  const oauth = [
    config.TEMPORAL_OAUTH_TOKEN_URL,
    config.TEMPORAL_OAUTH_CLIENT_ID,
    config.TEMPORAL_OAUTH_CLIENT_SECRET,
  ].filter(Boolean).length;
  if (oauth !== 0 && oauth !== 3) {
    throw new ConfigError(
      'TEMPORAL_OAUTH_TOKEN_URL, TEMPORAL_OAUTH_CLIENT_ID and TEMPORAL_OAUTH_CLIENT_SECRET are set together or not at all',
    );
  }
  if (oauth === 3 && config.TEMPORAL_API_KEY) {
    throw new ConfigError(
      'TEMPORAL_API_KEY and TEMPORAL_OAUTH_* both name a bearer token for Temporal: set one of them',
    );
  }
  if (config.QUIRE_RETRY_MAX_MS < config.QUIRE_RETRY_INITIAL_MS) {
    throw new ConfigError('QUIRE_RETRY_MAX_MS must not be below QUIRE_RETRY_INITIAL_MS');
  }
  const engineThreads =
    config.QUIRE_ENGINE_THREADS ??
    Math.max(1, Math.min(64, machine.cores ?? availableParallelism()));
  const result: QuireConfig = {
    ...config,
    QUIRE_ENGINE_THREADS: engineThreads,
    // P2: enough activities to keep every engine busy while others read or write the database.
    WORKER_CONCURRENCY: config.WORKER_CONCURRENCY ?? Math.min(16, Math.max(2, 2 * engineThreads)),
    QUIRE_SECRET_KEY: secrets.keys[0] ?? '',
    QUIRE_SECRET_KEYS: secrets.keys,
    secretKeySource: secrets.source,
  };
  // M2: a default every job would be refused for is a configuration fault, said at start.
  const fallback = config.QUIRE_DEFAULT_PROVIDER;
  if (
    fallback !== AUTO_PROVIDER &&
    describeProvider(fallback) !== undefined &&
    !enabledProviders(result).some((entry) => entry.name === fallback)
  ) {
    throw new ConfigError(
      `QUIRE_DEFAULT_PROVIDER: ${fallback} is not enabled by this configuration${
        fallback === 'simulated' ? ' (it needs QUIRE_ENABLE_SIMULATED=1)' : ''
      }`,
    );
  }
  return result;
}

/**
 * The configuration of this process's environment, parsed afresh on every call: entry points
 * (the worker, the web app, the scripts) call it once and pass the result down; nothing
 * caches it, so tests build their own with `parseConfig`.
 */
export function loadConfig(): QuireConfig {
  return parseConfig(withSettingsFile(process.env, configFiles), { files: configFiles });
}

/** D9: every setting Quire reads, by name (the settings file and cluster mode pass these). */
export const QUIRE_SETTING_NAMES: readonly string[] = [
  // PATH is the system's, read for finding engines; not a setting to pass around.
  ...Object.keys(schema.shape).filter((name) => name !== 'PATH'),
  'QUIRE_ENV_FILE',
];

/**
 * D9: the one settings file: `KEY=value` lines (`#` comments, blank lines, an optional
 * `export `, values optionally in single or double quotes). Pure.
 */
export function parseSettingsText(text: string): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim().replace(/^export\s+/, '');
    if (!line || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const name = line.slice(0, eq).trim();
    let value = line.slice(eq + 1).trim();
    const quoted = /^(['"])(.*)\1$/.exec(value);
    if (quoted) value = quoted[2]!;
    else value = value.replace(/\s+#.*$/, '');
    settings[name] = value;
  }
  return settings;
}

/**
 * D9: the environment with the settings file under it: `QUIRE_ENV_FILE` (default `.env`,
 * relative to the working directory; empty: none) fills in what the environment does not set,
 * and the environment wins. A file named by `QUIRE_ENV_FILE` that cannot be read is a
 * configuration fault; a missing default `.env` is not.
 */
export function withSettingsFile(
  env: Record<string, string | undefined>,
  files: ConfigFiles,
): Record<string, string | undefined> {
  const named = env.QUIRE_ENV_FILE;
  const path = named ?? '.env';
  if (path === '') return env;
  const text = files.readFile(path);
  if (text === undefined) {
    if (named !== undefined) throw new ConfigError(`QUIRE_ENV_FILE: cannot read ${named}`);
    return env;
  }
  return { ...parseSettingsText(text), ...env };
}

/** Key files as entry points read them: relative to the working directory. */
export const configFiles: ConfigFiles = {
  readFile(path) {
    try {
      return readFileSync(resolve(path), 'utf8');
    } catch {
      return undefined;
    }
  },
};
