/**
 * The one catalogue of failure classes (SPEC Q3). Activities throw `ApplicationFailure`
 * whose `type` is the class; workflows branch on it with the helpers below.
 */
export const FAILURE_CLASSES = [
  'credit',
  'auth',
  'outage',
  'budget',
  'timeout',
  'invalid',
  'content',
  'image',
  'internal',
  'crashed',
  'conflict',
] as const;

export type FailureClass = (typeof FAILURE_CLASSES)[number];

/** Classes that pause a provider's queue: the attempt is refunded and nothing fails. */
export const PAUSE_REASONS = [
  'credit',
  'auth',
  'outage',
  'budget',
] as const satisfies readonly FailureClass[];
export type PauseReason = (typeof PAUSE_REASONS)[number];

export const PAUSING_CLASSES: ReadonlySet<FailureClass> = new Set(PAUSE_REASONS);

/**
 * Pauses that only an operator's Resume lifts: no credit, refused credentials. An outage
 * reopens after its backoff and a spent budget at the next UTC midnight (Q3, B1).
 */
export function awaitsOperator(reason: string | null | undefined): boolean {
  return reason === 'credit' || reason === 'auth';
}

export function isPauseReason(value: unknown): value is PauseReason {
  return typeof value === 'string' && (PAUSE_REASONS as readonly string[]).includes(value);
}

/**
 * Classes where the input can never succeed: the job fails at once. Every other class that
 * does not pause is charged and retried after a backoff (timeout, internal, invalid, crashed).
 */
export const PERMANENT_CLASSES: ReadonlySet<FailureClass> = new Set([
  'image',
  'content',
  'conflict',
]);

export function isFailureClass(value: unknown): value is FailureClass {
  return typeof value === 'string' && (FAILURE_CLASSES as readonly string[]).includes(value);
}

export function isPausing(category: FailureClass): boolean {
  return PAUSING_CLASSES.has(category);
}

export function isPermanent(category: FailureClass): boolean {
  return PERMANENT_CLASSES.has(category);
}

/**
 * Error types that are not failure classes of the job but facts about the attempt:
 * `StaleAttempt` means this attempt's token is dead (lease expired, superseded, canceled),
 * so the attempt must stop without writing anything. Never retried.
 */
export const STALE_ATTEMPT = 'StaleAttempt';

/**
 * D1: a sealed value (an attempt token) that no key of the process opens: the fleet runs
 * with different keys. A configuration fault, never charged to the attempt.
 */
export const KEY_MISMATCH = 'SecretKeyMismatch';

/** A classified failure raised by a provider call (Q1). */
export class ProviderError extends Error {
  override name = 'ProviderError';
  constructor(
    readonly category: FailureClass,
    message: string,
    /** For `outage`: the provider's Retry-After, when it gave one; for `budget`: until midnight. */
    readonly retryAfterMs?: number,
    /** For `budget`: a workspace's own budget waits alone; the global one pauses the provider. */
    readonly scope: 'provider' | 'workspace' = 'provider',
  ) {
    super(message);
  }
}

/** The attempt's token no longer fences a running attempt (A1). */
export class StaleAttemptError extends Error {
  override name = STALE_ATTEMPT;
}
