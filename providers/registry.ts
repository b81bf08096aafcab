import type { MediaKind } from '../core/media';
import {
  type AudioEngine,
  type ImageEngine,
  isAudioEngine,
  isImageEngine,
  MediaKindRefusedError,
  type TranscriptionProvider,
} from '../core/provider';
import { describeProvider } from '../core/providerCatalogue';

/**
 * The providers a worker can reach, by name, and how a job's immutable snapshot is made
 * (provider, model, language, options, price) when the job is created. The worker's own
 * registry comes from the catalogue (providers/catalogue.ts); tests build theirs from engines.
 */
export interface ProviderRegistry {
  /** Any registered provider, for what every engine answers (identity, polish). */
  get(name: string): TranscriptionProvider;
  /** The engine that reads a job's page images; refuses one that does not read images (Q1). */
  imageEngine(name: string): ImageEngine;
  /** The engine that transcribes a job's recordings; refuses one that does not read audio (Q1). */
  audioEngine(name: string): AudioEngine;
  names(): string[];
  /** Starts what each engine's first call would wait for, at worker start. */
  warm(): void;
  /** Releases every engine's resources, at worker shutdown. */
  close(): Promise<void>;
}

/**
 * Q1: an engine under a catalogued name reads what the catalogue says it reads (the rule that
 * refuses a job at its creation, core/jobOptions.ts); one a test registers under another name,
 * what it implements.
 */
function cataloguedAsReading(name: string, kind: MediaKind): boolean {
  return describeProvider(name)?.kinds.includes(kind) ?? true;
}

export function createProviderRegistry(providers: TranscriptionProvider[]): ProviderRegistry {
  const byName = new Map(providers.map((p) => [p.name, p]));
  const images = new Map<string, ImageEngine>();
  const recordings = new Map<string, AudioEngine>();
  for (const [name, engine] of byName) {
    if (isImageEngine(engine) && cataloguedAsReading(name, 'image')) images.set(name, engine);
    if (isAudioEngine(engine) && cataloguedAsReading(name, 'audio')) recordings.set(name, engine);
  }

  // A name this worker does not have is a fault on our side (`internal`); a registered engine
  // asked for media it does not read is the job's (`invalid`), refused before any call.
  function get(name: string): TranscriptionProvider {
    const provider = byName.get(name);
    if (!provider) throw new Error(`provider ${name} is not registered on this worker`);
    return provider;
  }
  function engineFor<Engine>(engines: Map<string, Engine>, name: string, kind: MediaKind): Engine {
    const engine = engines.get(name);
    if (engine) return engine;
    throw new MediaKindRefusedError(get(name).name, kind);
  }

  return {
    get,
    imageEngine: (name) => engineFor(images, name, 'image'),
    audioEngine: (name) => engineFor(recordings, name, 'audio'),
    names: () => [...byName.keys()],
    warm() {
      for (const provider of byName.values()) provider.warm?.();
    },
    async close() {
      await Promise.allSettled([...byName.values()].map((p) => p.close?.()));
    },
  };
}

export { buildSnapshot, DEFAULT_PRICES } from '../core/pricing';
