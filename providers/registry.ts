import type { TranscriptionProvider } from '../core/provider';

/**
 * The providers a worker can reach, by name, and how a job's immutable snapshot is made
 * (provider, model, language, options, price) when the job is created. The worker's own
 * registry comes from the catalogue (providers/catalogue.ts); tests build theirs from engines.
 */
export interface ProviderRegistry {
  get(name: string): TranscriptionProvider;
  names(): string[];
  /** Starts what each engine's first call would wait for, at worker start. */
  warm(): void;
  /** Releases every engine's resources, at worker shutdown. */
  close(): Promise<void>;
}

export function createProviderRegistry(providers: TranscriptionProvider[]): ProviderRegistry {
  const byName = new Map(providers.map((p) => [p.name, p]));
  return {
    get(name) {
      const provider = byName.get(name);
      if (!provider) throw new Error(`provider ${name} is not registered on this worker`);
      return provider;
    },
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
