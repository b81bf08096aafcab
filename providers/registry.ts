import type { CostUnit, JobSnapshot, TranscriptionProvider } from '../core/provider';

/**
 * The providers a worker can reach, by name, and how a job's immutable snapshot is made
 * (provider, model, language, options, price) when the job is created.
 */
export type PriceTable = Partial<Record<CostUnit, number>>;

export interface ProviderRegistry {
  get(name: string): TranscriptionProvider;
  names(): string[];
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
  };
}

/** Default prices in micro-units per unit (B1); an operator may override them per provider. */
export const DEFAULT_PRICES: Record<string, PriceTable> = {
  simulated: { line: 100, page: 500, audio_second: 200, call: 0 },
  tesseract: { line: 0, page: 0, call: 0 },
  pocketsphinx: { audio_second: 0, call: 0 },
};

export function buildSnapshot(args: {
  provider: string;
  model?: string;
  language?: string;
  options?: Record<string, unknown>;
  prices?: Record<string, PriceTable>;
}): JobSnapshot {
  const prices = args.prices ?? DEFAULT_PRICES;
  return {
    provider: args.provider,
    model: args.model ?? 'default',
    language: args.language ?? 'en',
    options: args.options ?? {},
    price: prices[args.provider] ?? {},
  };
}
