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

/**
 * D7: Quire's own infrastructure (its PostgreSQL, its object store, its Temporal server) did
 * not answer. Not the job's fault, not the page's: never charged to the attempt. The workflow
 * waits and runs the same attempt again (same token) once the dependency is back; a finished
 * engine read waits inside its step, heartbeating, until it can be saved.
 */
export const INFRASTRUCTURE_FAULT = 'InfrastructureFault';

/** The network could not reach the service, or the connection broke under a query. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL's own codes for "not now" (SQLSTATE classes 08 connection exception and 57P
 * operator intervention: admin shutdown, crash shutdown, cannot connect now, database
 * dropped; 53300 too many connections).
 */
function isPostgresUnavailable(code: string): boolean {
  return code.startsWith('08') || code.startsWith('57P') || code === '53300';
}

/** Messages of the `pg` client when its connection goes away between or during queries. */
const LOST_CONNECTION =
  /Connection terminated|connection timeout|Query read timeout|timeout exceeded when trying to connect|canceling statement due to statement timeout|Client has encountered a connection error|Client was closed|terminating connection due to administrator command|the database system is (starting up|shutting down|in recovery mode)/i;

/**
 * D7: whether `error` says that one of Quire's own services was unreachable, rather than that
 * a query, an object or an engine was at fault. Pure: it reads only the error's fields (and
 * its causes, a wrapped AggregateError's errors included).
 */
export function isInfrastructureError(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 5) return false;
  const e = error as {
    name?: string;
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (e.name === 'BlobStoreUnavailableError') return true;
  if (typeof e.code === 'string') {
    if (UNREACHABLE_CODES.has(e.code)) return true;
    if (/^[0-9A-Z]{5}$/.test(e.code) && isPostgresUnavailable(e.code)) return true;
  }
  if (typeof e.message === 'string' && LOST_CONNECTION.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isInfrastructureError(x, depth + 1)))
    return true;
  return e.cause !== undefined && e.cause !== error && isInfrastructureError(e.cause, depth + 1);
}

/**
 * D7: the `pg` client gave up waiting for a statement's answer (`query_timeout`): its
 * connection may still be waiting for it, so it is discarded, never reused or rolled back over.
 */
export function isQueryTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === 'Query read timeout';
}

/** Raised inside an activity when an outage outlasts its wait (D7); never charged. */
export class InfrastructureFaultError extends Error {
  override name = INFRASTRUCTURE_FAULT;
  constructor(
    readonly dependency: 'postgres' | 'object_store' | 'temporal' | 'unknown',
    message: string,
  ) {
    super(message);
  }
}

/**
 * D8: this process cannot read an object the installation wrote (its blob store is another
 * one than the fleet's): a fault of its configuration, like a key it does not hold (D1). Never
 * charged; the worker stops taking work and the step runs again on one that can read it.
 */
export const CONFIG_MISMATCH = 'ConfigurationMismatch';
