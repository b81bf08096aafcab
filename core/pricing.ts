import type { MediaKind } from './media';
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
  // Remote engines: indicative list prices; operators set theirs with QUIRE_PRICES.
  'openai-chat': { token: 3, call: 0 },
  whisper: { audio_second: 100, call: 0 },
  'async-speech': { audio_second: 150, call: 0 },
};

/** Merges an operator's price table (JSON of provider -> unit -> micros) over the defaults. */
export function pricesWith(
  overrides: Record<string, PriceTable> | undefined,
): Record<string, PriceTable> {
  if (!overrides) return DEFAULT_PRICES;
  const merged: Record<string, PriceTable> = { ...DEFAULT_PRICES };
  for (const [provider, table] of Object.entries(overrides))
    merged[provider] = { ...merged[provider], ...table };
  return merged;
}

export const KNOWN_PROVIDERS = Object.keys(DEFAULT_PRICES);

/** `auto` picks the offline engine for the page's kind (Q2: real engines are the default). */
export const AUTO_PROVIDER = 'auto';

export function resolveProvider(provider: string, kind: MediaKind): string {
  if (provider !== AUTO_PROVIDER) return provider;
  return kind === 'image' ? 'tesseract' : 'pocketsphinx';
}

/** A snapshot maker for a job whose page kind is known only when the job is recorded. */
export type SnapshotFor = JobSnapshot | ((kind: MediaKind) => JobSnapshot);

export function snapshotFor(make: SnapshotFor, kind: MediaKind): JobSnapshot {
  return typeof make === 'function' ? make(kind) : make;
}

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
