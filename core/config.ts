import { z } from 'zod';
import { AUTO_PROVIDER, describeProvider, enabledProviders } from './providerCatalogue';
import { MAINTENANCE_TASK_QUEUE } from './temporal';

/**
 * The one typed configuration of Quire, read from the environment and validated at start.
 * Defaults run on a laptop: local Postgres, the Temporal dev server, blobs under `.data/`.
 */
const DEVELOPMENT_SECRET = 'quire-development-secret-do-not-use-in-production';

/** Base of canvas URIs when none is configured: the console on a laptop. */
export const DEFAULT_PUBLIC_URL = 'http://localhost:3000';

const intFrom = (min: number, max: number, fallback: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

/** Per-call timeout of every remote engine call unless configured (Q2). */
export const DEFAULT_PROVIDER_TIMEOUT_MS = 240_000;
/** Where the local engines look for their programs when no PATH is set. */
export const DEFAULT_PROGRAM_PATH = '/usr/local/bin:/usr/bin:/bin';

/** Surrounding blanks ignored; blank is unset. */
const trimmedOptional = z
  .string()
  .optional()
  .transform((value) => value?.trim() || undefined);

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
  QUIRE_TASK_QUEUE: z.string().min(1).default('quire-transcription'),
  QUIRE_MAINTENANCE_TASK_QUEUE: z.string().min(1).default(MAINTENANCE_TASK_QUEUE),
  QUIRE_TEMPORAL_UI_URL: z.string().url().default('http://localhost:8233'),
  WORKER_CONCURRENCY: intFrom(1, 16, 2),
  QUIRE_SHUTDOWN_GRACE_MS: intFrom(0, 3_600_000, 30_000),
  QUIRE_HEARTBEAT_TIMEOUT_MS: intFrom(1_000, 600_000, 15_000),
  /** Prebuilt workflow bundle (tests, container images); bundled at start when unset. */
  QUIRE_WORKFLOW_BUNDLE: z.string().optional(),
  /** How long a cached workflow waits for its own worker before any worker may take it. */
  QUIRE_STICKY_TIMEOUT_MS: intFrom(1_000, 600_000, 3_000),
  QUIRE_HEALTH_FILE: z.string().default('.data/worker-health.json'),
  QUIRE_HEALTH_MAX_AGE_MS: intFrom(1_000, 3_600_000, 60_000),
  QUIRE_MAX_ATTEMPTS: intFrom(1, 100, 5),
  QUIRE_POLISH_ATTEMPTS: intFrom(0, 100, 3),
  QUIRE_RETRY_INITIAL_MS: intFrom(1, 3_600_000, 2_000),
  /** How long one recognize activity runs before the workflow hears of its progress. */
  QUIRE_RECOGNIZE_SLICE_MS: intFrom(100, 600_000, 10_000),
  QUIRE_RETRY_MAX_MS: intFrom(1, 86_400_000, 60_000),
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
  /** Base of canvas URIs and links in events. */
  QUIRE_PUBLIC_URL: z.string().url().default(DEFAULT_PUBLIC_URL),
  /** Bytes all workspaces may store together (U2); unset: no global quota. */
  QUIRE_GLOBAL_QUOTA_BYTES: z.coerce.number().int().positive().optional(),
  QUIRE_SECRET_KEY: z.string().min(32).optional(),
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
  /** O3: events and finished deliveries older than this are removed. */
  QUIRE_EVENT_RETENTION_DAYS: intFrom(1, 3650, 30),
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

export type QuireConfig = Omit<z.infer<typeof schema>, 'QUIRE_SECRET_KEY'> & {
  /** Seals attempt tokens, signs page tokens, encrypts webhook secrets. Never logged. */
  QUIRE_SECRET_KEY: string;
  /** True when the built-in development secret is in use. */
  usingDevelopmentSecret: boolean;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses configuration from an environment object; pure, so tests can pass their own. */
export function parseConfig(env: Record<string, string | undefined>): QuireConfig {
  const cleaned = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value !== ''),
  );
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const config = parsed.data;
  if (config.QUIRE_SECRET_KEY === undefined && config.NODE_ENV === 'production') {
    throw new ConfigError('QUIRE_SECRET_KEY must be set (32 characters or more) in production');
  }
  if (config.QUIRE_BLOB_STORE === 's3' && !config.QUIRE_S3_BUCKET) {
    throw new ConfigError('QUIRE_S3_BUCKET must be set when QUIRE_BLOB_STORE=s3');
  }
  if (Boolean(config.QUIRE_S3_ACCESS_KEY_ID) !== Boolean(config.QUIRE_S3_SECRET_ACCESS_KEY)) {
    throw new ConfigError(
      'QUIRE_S3_ACCESS_KEY_ID and QUIRE_S3_SECRET_ACCESS_KEY are set together or not at all',
    );
  }
  if (config.QUIRE_RETRY_MAX_MS < config.QUIRE_RETRY_INITIAL_MS) {
    throw new ConfigError('QUIRE_RETRY_MAX_MS must not be below QUIRE_RETRY_INITIAL_MS');
  }
  const result: QuireConfig = {
    ...config,
    QUIRE_SECRET_KEY: config.QUIRE_SECRET_KEY ?? DEVELOPMENT_SECRET,
    usingDevelopmentSecret: config.QUIRE_SECRET_KEY === undefined,
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
  return parseConfig(process.env);
}
