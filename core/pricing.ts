import type { EngineChoice } from './engineModels';
/**
 * Prices per provider and unit (B1), in micro-units of the workspace currency, and the
 * job's immutable context snapshot made from them when a job is created.
 */
import type { MediaKind } from './media';
import type { CallCost, JobSnapshot, PriceTable } from './provider';
import { PROVIDER_CATALOGUE } from './providerCatalogue';

/** Each catalogued provider's default prices (core/providerCatalogue.ts). */
export const DEFAULT_PRICES: Record<string, PriceTable> = Object.fromEntries(
  PROVIDER_CATALOGUE.map((entry) => [entry.name, entry.prices]),
);

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

/**
 * A snapshot maker for a job whose page kind, and whose item's engine choice (V9), are known
 * only when the job is recorded.
 */
export type SnapshotFor = JobSnapshot | ((kind: MediaKind, inherited: EngineChoice) => JobSnapshot);

export function snapshotFor(
  make: SnapshotFor,
  kind: MediaKind,
  inherited: EngineChoice = {},
): JobSnapshot {
  return typeof make === 'function' ? make(kind, inherited) : make;
}

export function buildSnapshot(args: {
  provider: string;
  model?: string;
  language?: string;
  options?: Record<string, unknown>;
  prices?: Record<string, PriceTable>;
}): JobSnapshot {
  const prices = args.prices ?? DEFAULT_PRICES;
  const polishProvider = args.options?.polishProvider;
  return {
    provider: args.provider,
    model: args.model ?? 'default',
    language: args.language ?? 'en',
    options: args.options ?? {},
    price: prices[args.provider] ?? {},
    ...(typeof polishProvider === 'string'
      ? { polishPrice: prices[polishProvider] ?? {} }
      : undefined),
  };
}

/** The provider a call is made by, and its price at the job's creation. */
export interface BilledProvider {
  provider: string;
  price: PriceTable;
}

/**
 * M3: who makes a stage's calls. Polish is made by `options.polishProvider` when the job names
 * one, and is priced, recorded and paused under that provider; every other stage by the job's
 * own provider.
 */
export function billedProvider(snapshot: JobSnapshot, stage: 'engine' | 'polish'): BilledProvider {
  const polish = snapshot.options.polishProvider;
  if (stage === 'polish' && typeof polish === 'string' && polish !== snapshot.provider) {
    return { provider: polish, price: snapshot.polishPrice ?? {} };
  }
  return { provider: snapshot.provider, price: snapshot.price };
}

/**
 * B1: what a call costs, in micro-units, at the price its provider had when the job was
 * created; the one formula behind the ledger's rows and the budget's estimates. A unit the
 * table does not price is free.
 */
export function costMicros(price: PriceTable, cost: CallCost | null): number {
  return cost ? Math.round(cost.units * (price[cost.unit] ?? 0)) : 0;
}
