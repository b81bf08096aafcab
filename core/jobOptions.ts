import { z } from 'zod';
import { checkModelInstalled, type EngineChoice, type EngineModel } from './engineModels';
import { DomainError, type ErrorCode } from './errors';
import { FAILURE_CLASSES } from './failures';
import type { MediaKind } from './media';
import { AUTO_PROVIDER, describeProvider, resolveProvider } from './providerCatalogue';

/**
 * M2: what a job may ask for, checked against the provider catalogue when the job is created,
 * so that a bad request is a 422 with a stable code and never a crashed attempt. A provider
 * must be catalogued and enabled on this installation (`enabled`: the names the installation
 * offers the workspace); `options.polishProvider` likewise, and of the page's kind; simulated
 * options (fault injection, latency) only where the simulated engine is enabled, and bounded
 * so that no job holds a worker slot for hours.
 */

export const SIMULATED_OPS = ['segment', 'read', 'recognize', 'submit', 'poll', 'polish'] as const;

/** Bounds of the simulated engine's options: one page's simulated work stays within minutes. */
export const SIMULATED_LIMITS = {
  /** Per call. */
  latencyMs: 10_000,
  /** From submit to done of a recording (polled while the activity heartbeats). */
  audioLatencyMs: 600_000,
  lines: 5_000,
  audioSegments: 5_000,
  faults: 32,
  retryAfterMs: 3_600_000,
  /** Lines times per-call latency: the longest a page's recognition may be made to take. */
  pageLatencyMs: 600_000,
} as const;

const L = SIMULATED_LIMITS;
const count = (max: number) => z.number().int().min(0).max(max);

const simulatedFault = z
  .object({
    op: z.enum([...SIMULATED_OPS, 'any']),
    category: z.enum(FAILURE_CLASSES),
    rate: z.number().min(0).max(1).optional(),
    segments: z.array(count(L.lines)).max(L.lines).optional(),
    attempts: z.array(z.number().int().min(1).max(100)).max(100).optional(),
    retryAfterMs: count(L.retryAfterMs).optional(),
  })
  .strict();

const simulatedOptions = z
  .object({
    seed: z.string().max(200).optional(),
    lines: count(L.lines).optional(),
    audioSegments: count(L.audioSegments).optional(),
    latencyMs: count(L.latencyMs).optional(),
    audioLatencyMs: count(L.audioLatencyMs).optional(),
    faults: z.array(simulatedFault).max(L.faults).optional(),
    /** P1: read fresh pages in one pass. */
    readPages: z.boolean().optional(),
  })
  .strict()
  .refine(
    (o) => (o.latencyMs ?? 0) * (o.lines ?? 8) <= L.pageLatencyMs,
    `lines times latencyMs must be at most ${L.pageLatencyMs} ms`,
  );

export type SimulatedJobOptions = z.infer<typeof simulatedOptions>;

const refuse = (code: ErrorCode, message: string, field: string) =>
  new DomainError(code, message, { field });

/** A provider name the request may use: catalogued (or offered by the caller) and enabled. */
function checkProvider(name: string, enabled: readonly string[], field: string): void {
  if (enabled.includes(name)) return;
  if (describeProvider(name) === undefined) {
    throw refuse('unknown_provider', `${field}: unknown provider ${name}`, field);
  }
  throw refuse(
    'provider_not_enabled',
    `${field}: provider ${name} is not enabled on this installation`,
    field,
  );
}

/**
 * M2, M4: the providers a workspace may use: those the installation enables, narrowed to the
 * operators' list for the workspace when it has one (null: all of them).
 */
export function providersForWorkspace(
  installation: readonly string[],
  workspace: readonly string[] | null,
): readonly string[] {
  return workspace === null
    ? installation
    : installation.filter((name) => workspace.includes(name));
}

/** Once `auto` is resolved for the page's kind: the provider chosen must be one the request may use. */
export function checkResolvedProvider(provider: string, enabled: readonly string[]): void {
  checkProvider(provider, enabled, 'provider');
}

/** X5: every option a job may carry; any other key is refused (422 `unknown_option`). */
export const JOB_OPTION_KEYS = ['polishProvider', 'overwriteHumanLines', 'simulated'] as const;

/**
 * V3: whether a job reads every line of a page, those a person edited or verified too (an
 * explicit choice, recorded in the audit log), instead of keeping them.
 */
export function overwritesHumanLines(options: Record<string, unknown> | undefined): boolean {
  return options?.overwriteHumanLines === true;
}

/** The polish provider a job's options name, if any. */
export function polishProviderOf(options: Record<string, unknown> | undefined): string | undefined {
  const value = options?.polishProvider;
  return typeof value === 'string' ? value : undefined;
}

/**
 * Checks a job request before anything is written: the provider (`auto` or enabled), the
 * polish provider, and the simulated engine's options. Throws a `DomainError` (kind
 * `invalid`, 422) with a stable code: `unknown_provider`, `provider_not_enabled`,
 * `unknown_option`, `invalid_options`, `simulated_not_enabled`, `invalid_simulated_options`.
 */
export function checkJobRequest(
  request: { provider: string; options?: Record<string, unknown> },
  enabled: readonly string[],
): void {
  if (request.provider !== AUTO_PROVIDER) checkProvider(request.provider, enabled, 'provider');
  const options = request.options ?? {};
  // X5: an option no stage reads would be kept in the snapshot and silently ignored.
  for (const key of Object.keys(options)) {
    if (!(JOB_OPTION_KEYS as readonly string[]).includes(key)) {
      const name = /^[A-Za-z0-9_-]{1,64}$/.test(key) ? key : JSON.stringify(key.slice(0, 64));
      throw refuse('unknown_option', `options.${name} is not a job option`, `options.${name}`);
    }
  }
  if ('polishProvider' in options) {
    const polish = polishProviderOf(options);
    if (polish === undefined || polish.length === 0 || polish.length > 64) {
      throw refuse('invalid_options', 'options.polishProvider must be a provider name', 'options');
    }
    checkProvider(polish, enabled, 'options.polishProvider');
  }
  if ('overwriteHumanLines' in options && typeof options.overwriteHumanLines !== 'boolean') {
    throw refuse(
      'invalid_options',
      'options.overwriteHumanLines must be true or false',
      'options.overwriteHumanLines',
    );
  }
  if ('simulated' in options) {
    if (!enabled.includes('simulated')) {
      throw refuse(
        'simulated_not_enabled',
        'options.simulated: the simulated engine is not enabled on this installation',
        'options.simulated',
      );
    }
    const parsed = simulatedOptions.safeParse(options.simulated);
    if (!parsed.success) {
      const problems = parsed.error.issues.map(
        (i) => `${['options.simulated', ...i.path].join('.')}: ${i.message}`,
      );
      throw refuse('invalid_simulated_options', problems.join('; '), 'options.simulated');
    }
  }
}

/**
 * Once the page's kind is known: a catalogued provider (main or polish) must read that kind
 * (Q1), so a job is refused rather than failing `invalid` on its first attempt. Names outside
 * the catalogue (engines a test registers) are not checked.
 */
export function checkProviderKind(
  provider: string,
  options: Record<string, unknown> | undefined,
  kind: MediaKind,
): void {
  const polish = polishProviderOf(options);
  for (const [name, field] of [
    [provider, 'provider'],
    [polish, 'options.polishProvider'],
  ] as const) {
    if (name === undefined) continue;
    const entry = describeProvider(name);
    if (entry && !entry.kinds.includes(kind)) {
      throw refuse(
        'provider_kind_mismatch',
        `${field}: provider ${name} does not read ${kind} pages`,
        field,
      );
    }
  }
}

/**
 * V9: the engine, model and language a job of a page of `kind` runs with: the request's, else
 * its item's or collection's (`inherited`), else the installation's default provider; checked
 * as the request would be (enabled, of the page's kind) and, given the installation's models,
 * refused with `model_not_installed` when its language has none. Called inside the job's
 * transaction: a refusal writes nothing and starts no attempt.
 */
export function chooseJobEngine(args: {
  request: { provider?: string; model?: string; language?: string };
  options?: Record<string, unknown>;
  inherited: EngineChoice;
  defaultProvider: string;
  kind: MediaKind;
  enabled: readonly string[];
  models?: readonly EngineModel[];
}): { provider: string; model?: string; language?: string } {
  const { request, inherited } = args;
  const named = request.provider ?? inherited.provider ?? args.defaultProvider;
  if (named !== AUTO_PROVIDER) checkProvider(named, args.enabled, 'provider');
  const provider = resolveProvider(named, args.kind);
  checkResolvedProvider(provider, args.enabled);
  checkProviderKind(provider, args.options, args.kind);
  const language = request.language ?? inherited.language;
  if (args.models) checkModelInstalled(provider, language, args.models);
  // An item's model belongs to its engine: a request naming another engine leaves it behind.
  const model = request.model ?? (request.provider === undefined ? inherited.model : undefined);
  return { provider, model, language };
}
