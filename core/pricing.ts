import type { CostUnit, JobSnapshot } from './provider';

/**
 * Prices per provider and unit (B1), in micro-units of the workspace currency, and the
 * job's immutable context snapshot made from them when a job is created.
 */
export type PriceTable = Partial<Record<CostUnit, number>>;

export const DEFAULT_PRICES: Record<string, PriceTable> = {
  simulated: { line: 100, page: 500, audio_second: 200, call: 0 },
  tesseract: { line: 0, page: 0, call: 0 },
  pocketsphinx: { audio_second: 0, call: 0 },
};

export const KNOWN_PROVIDERS = Object.keys(DEFAULT_PRICES);

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
