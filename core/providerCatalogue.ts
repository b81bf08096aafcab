import type { MediaKind } from './media';
import type { PriceTable } from './provider';

/**
 * The one catalogue of transcription providers: the names a job may ask for,
 * the media each reads, its default prices (B1), the settings its engine reads and when a
 * worker registers it. Pure description, so the web validates requests against it without
 * loading an engine; `providers/catalogue.ts` builds the engines from it for the worker.
 */
export type ProviderName =
  | 'simulated'
  | 'tesseract'
  | 'pocketsphinx'
  | 'openai-chat'
  | 'whisper'
  | 'async-speech';

export interface ProviderDescription {
  name: ProviderName;
  /** The media its engine reads; the other kind fails `invalid` (Q1). */
  kinds: readonly MediaKind[];
  /** Runs on the worker's own machine, offline (Q2), or calls a remote service. */
  location: 'local' | 'remote';
  /** Default prices in micro-units per unit; QUIRE_PRICES merges over them (B1). */
  prices: PriceTable;
  /**
   * The configuration keys (core/config.ts) its engine reads. Named, not typed by the
   * configuration, because the configuration's own validation reads this catalogue.
   */
  settings: readonly string[];
  /** Registered only when this setting is set (present, or true); without one, always registered. */
  enabledBy?: string;
  /**
   * M3: whose credentials its calls use, so whose outcome its pause may touch.
   * `installation`: shared credentials (or a shared local engine); a pause holds every
   * workspace and only an operator resumes it. `workspace`: each workspace's own; a pause
   * holds that workspace alone, and that workspace may resume it.
   */
  credentials: 'installation' | 'workspace';
}

export const PROVIDER_CATALOGUE: readonly ProviderDescription[] = [
  {
    name: 'simulated',
    kinds: ['image', 'audio'],
    location: 'local',
    prices: { line: 100, page: 500, audio_second: 200, call: 0 },
    settings: ['QUIRE_ENABLE_SIMULATED', 'QUIRE_SIMULATED_CALL_LOG'],
    // Tests and benchmarks only (M2).
    enabledBy: 'QUIRE_ENABLE_SIMULATED',
    // Its faults come from the job's own options: what one workspace injects pauses only it.
    credentials: 'workspace',
  },
  {
    name: 'tesseract',
    kinds: ['image'],
    location: 'local',
    prices: { line: 0, page: 0, call: 0 },
    settings: ['QUIRE_TESSDATA_DIR', 'QUIRE_TESSERACT_ENGINE', 'QUIRE_ENGINE_THREADS', 'PATH'],
    credentials: 'installation',
  },
  {
    name: 'pocketsphinx',
    kinds: ['audio'],
    location: 'local',
    prices: { audio_second: 0, call: 0 },
    settings: ['QUIRE_POCKETSPHINX_DIR', 'PATH'],
    credentials: 'installation',
  },
  // Remote engines: indicative list prices; operators set theirs with QUIRE_PRICES.
  {
    name: 'openai-chat',
    kinds: ['image'],
    location: 'remote',
    prices: { token: 3, call: 0 },
    settings: [
      'QUIRE_OPENAI_BASE_URL',
      'QUIRE_OPENAI_API_KEY',
      'QUIRE_OPENAI_MODEL',
      'QUIRE_PROVIDER_TIMEOUT_MS',
    ],
    enabledBy: 'QUIRE_OPENAI_BASE_URL',
    credentials: 'installation',
  },
  {
    name: 'whisper',
    kinds: ['audio'],
    location: 'remote',
    prices: { audio_second: 100, call: 0 },
    settings: [
      'QUIRE_WHISPER_BASE_URL',
      'QUIRE_WHISPER_API_KEY',
      'QUIRE_WHISPER_MODEL',
      'QUIRE_WHISPER_DIR',
      'QUIRE_PROVIDER_TIMEOUT_MS',
    ],
    enabledBy: 'QUIRE_WHISPER_BASE_URL',
    credentials: 'installation',
  },
  {
    name: 'async-speech',
    kinds: ['audio'],
    location: 'remote',
    prices: { audio_second: 150, call: 0 },
    settings: [
      'QUIRE_ASYNC_SPEECH_BASE_URL',
      'QUIRE_ASYNC_SPEECH_API_KEY',
      'QUIRE_ASYNC_SPEECH_MODEL',
      'QUIRE_PROVIDER_TIMEOUT_MS',
    ],
    enabledBy: 'QUIRE_ASYNC_SPEECH_BASE_URL',
    credentials: 'installation',
  },
];

/** The names a job may ask for besides `auto`, in catalogue order. */
export const KNOWN_PROVIDERS: readonly string[] = PROVIDER_CATALOGUE.map((entry) => entry.name);

export function describeProvider(name: string): ProviderDescription | undefined {
  return PROVIDER_CATALOGUE.find((entry) => entry.name === name);
}

/** A parsed configuration (core/config.ts `QuireConfig`), read by setting name. */
type Settings = Readonly<Record<string, unknown>>;

/** Whether a worker with this configuration registers the provider. */
function isProviderEnabled(entry: ProviderDescription, config: Settings): boolean {
  if (entry.enabledBy === undefined) return true;
  const setting = config[entry.enabledBy];
  return setting !== undefined && setting !== false;
}

export function enabledProviders(config: Settings): ProviderDescription[] {
  return PROVIDER_CATALOGUE.filter((entry) => isProviderEnabled(entry, config));
}

/** `auto` picks the offline engine for the page's kind (Q2: real engines are the default). */
export const AUTO_PROVIDER = 'auto';

const AUTO_ENGINE: Record<MediaKind, ProviderName> = { image: 'tesseract', audio: 'pocketsphinx' };

export function resolveProvider(provider: string, kind: MediaKind): string {
  return provider === AUTO_PROVIDER ? AUTO_ENGINE[kind] : provider;
}

/**
 * M3: whose credentials a provider's calls use. Names outside the catalogue (an engine a test
 * registers) count as the installation's: a pause of theirs holds everyone.
 */
export function credentialScope(name: string): ProviderDescription['credentials'] {
  return describeProvider(name)?.credentials ?? 'installation';
}

/**
 * The key of a provider's pause for a job of `workspaceId`: that workspace for providers on
 * workspace credentials, null (the whole installation) for shared ones.
 */
export function pauseKey(name: string, workspaceId: number): number | null {
  return credentialScope(name) === 'workspace' ? workspaceId : null;
}
