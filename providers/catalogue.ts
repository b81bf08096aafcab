import type { QuireConfig } from '../core/config';
import { type ImageEngine, isImageEngine, type TranscriptionProvider } from '../core/provider';
import {
  enabledProviders,
  type ProviderDescription,
  type ProviderName,
} from '../core/providerCatalogue';
import { AsyncSpeechProvider } from './asyncSpeech';
import { OpenAiAudioProvider } from './openaiAudio';
import { OpenAiChatProvider } from './openaiChat';
import { PocketsphinxProvider } from './pocketsphinx';
import { SimulatedProvider } from './simulated';
import { createTesseractEngine } from './tesseractNative';

/**
 * Builds the engines of the provider catalogue (core/providerCatalogue.ts) from
 * configuration: every provider the catalogue enables under it, each given its own settings.
 * The catalogue says which providers exist and when they are on; this file only says how
 * each engine is made, one factory per catalogued name (the type makes a missing one an error).
 */
export interface EngineExtras {
  /** Test seam for the remote engines. */
  fetchImpl?: typeof fetch;
  /** Finds line boxes for the chat engine; defaults to the tesseract engine built alongside. */
  fallbackSegmenter?: ImageEngine;
}

type EngineFactory = (
  config: QuireConfig,
  extras: EngineExtras,
  built: ReadonlyMap<string, TranscriptionProvider>,
) => TranscriptionProvider;

/** An engine built before this one, when it reads images. */
function imageEngineIn(
  built: ReadonlyMap<string, TranscriptionProvider>,
  name: string,
): ImageEngine | undefined {
  const engine = built.get(name);
  return engine && isImageEngine(engine) ? engine : undefined;
}

/** Only called for enabled entries, so a remote engine's base URL is present. */
function required(value: string | undefined, key: string): string {
  if (value === undefined) throw new Error(`${key} is not set`);
  return value;
}

const ENGINES: Record<ProviderName, EngineFactory> = {
  simulated: (config) => new SimulatedProvider({ callLog: config.QUIRE_SIMULATED_CALL_LOG }),
  tesseract: (config) =>
    createTesseractEngine({
      engine: config.QUIRE_TESSERACT_ENGINE,
      threads: config.QUIRE_ENGINE_THREADS,
      tessdataDir: config.QUIRE_TESSDATA_DIR,
      searchPath: config.PATH,
    }),
  pocketsphinx: (config) =>
    new PocketsphinxProvider({ workDir: config.QUIRE_POCKETSPHINX_DIR, searchPath: config.PATH }),
  'openai-chat': (config, extras, built) =>
    new OpenAiChatProvider({
      name: 'openai-chat',
      baseUrl: required(config.QUIRE_OPENAI_BASE_URL, 'QUIRE_OPENAI_BASE_URL'),
      apiKey: config.QUIRE_OPENAI_API_KEY,
      model: config.QUIRE_OPENAI_MODEL,
      timeoutMs: config.QUIRE_PROVIDER_TIMEOUT_MS,
      fetchImpl: extras.fetchImpl,
      fallbackSegmenter: extras.fallbackSegmenter ?? imageEngineIn(built, 'tesseract'),
    }),
  whisper: (config, extras) =>
    new OpenAiAudioProvider({
      name: 'whisper',
      baseUrl: required(config.QUIRE_WHISPER_BASE_URL, 'QUIRE_WHISPER_BASE_URL'),
      apiKey: config.QUIRE_WHISPER_API_KEY,
      model: config.QUIRE_WHISPER_MODEL,
      workDir: config.QUIRE_WHISPER_DIR,
      timeoutMs: config.QUIRE_PROVIDER_TIMEOUT_MS,
      fetchImpl: extras.fetchImpl,
    }),
  'async-speech': (config, extras) =>
    new AsyncSpeechProvider({
      name: 'async-speech',
      baseUrl: required(config.QUIRE_ASYNC_SPEECH_BASE_URL, 'QUIRE_ASYNC_SPEECH_BASE_URL'),
      apiKey: config.QUIRE_ASYNC_SPEECH_API_KEY,
      model: config.QUIRE_ASYNC_SPEECH_MODEL,
      timeoutMs: config.QUIRE_PROVIDER_TIMEOUT_MS,
      fetchImpl: extras.fetchImpl,
    }),
};

/**
 * The engines enabled under `config`, in catalogue order (local before remote, so the chat
 * engine finds the tesseract engine to segment with); `include` narrows the entries.
 */
export function createEngines(
  config: QuireConfig,
  extras: EngineExtras = {},
  include: (entry: ProviderDescription) => boolean = () => true,
): TranscriptionProvider[] {
  const built = new Map<string, TranscriptionProvider>();
  for (const entry of enabledProviders(config).filter(include))
    built.set(entry.name, ENGINES[entry.name](config, extras, built));
  return [...built.values()];
}

/** The remote engines enabled under `config` (each when its base URL is set, Q2). */
export function createRemoteEngines(
  config: QuireConfig,
  extras: EngineExtras = {},
): TranscriptionProvider[] {
  return createEngines(config, extras, (entry) => entry.location === 'remote');
}
