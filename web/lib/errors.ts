import { ERROR_CODES, type ErrorCode, isErrorCode } from '@quire/core/errorCodes';
import { DomainError, type ErrorKind } from '@quire/core/errors';

/**
 * The one place a refusal becomes an HTTP answer (SPEC §7): `{error:{code,message}}` with the
 * status its kind calls for, and the one place it becomes what a person reads in the console.
 * The API routes, the ingest and the benchmark server answer through `httpErrorOf`; console
 * actions through `refusalOf`. Pure, so tests can ask what status an error gets.
 */
export const STATUS_OF_KIND: Record<ErrorKind, number> = {
  malformed: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  precondition_failed: 412,
  too_large: 413,
  unsupported: 415,
  invalid: 422,
  precondition_required: 428,
  quota: 429,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

export function statusOfCode(code: ErrorCode): number {
  return STATUS_OF_KIND[ERROR_CODES[code].kind];
}

/** A refusal decided by the HTTP layer itself (headers, body size, JSON, path), with its headers. */
export class ApiError extends DomainError {
  override name = 'ApiError';
  constructor(
    code: ErrorCode,
    message?: string,
    readonly headers?: HeadersInit,
  ) {
    super(code, message);
  }

  get status(): number {
    return STATUS_OF_KIND[this.kind];
  }
}

export interface HttpError {
  status: number;
  body: { error: { code: ErrorCode; message: string } & Record<string, unknown> };
  headers?: HeadersInit;
}

/** The body of a refusal, for the few answers that carry more than the error (a page's ETag). */
export function errorBody(
  code: ErrorCode,
  message?: string,
  details?: Record<string, unknown>,
): HttpError['body'] {
  return { error: { code, message: message ?? ERROR_CODES[code].sentence, ...details } };
}

/** The answer for a known refusal; undefined for anything else (an internal error). */
export function httpErrorOf(error: unknown): HttpError | undefined {
  if (!(error instanceof DomainError)) return undefined;
  return {
    status: STATUS_OF_KIND[error.kind],
    body: errorBody(error.code, error.message, error.details),
    ...(error instanceof ApiError && error.headers ? { headers: error.headers } : {}),
  };
}

export interface Refusal {
  code: ErrorCode;
  /** What the console shows: the code's sentence, or the error's message where it names what to change. */
  message: string;
}

/**
 * An API message (`the search holds a NUL`) as the console writes it: `The search holds a NUL.`
 * A message that starts with a field's name keeps it as the form spells it (`URL`, `eventTypes`).
 */
function asSentence(message: string): string {
  const text = message
    .replace(/^url\b/, 'URL')
    .replace(/^[a-z]+\b/, (word) => word.charAt(0).toUpperCase() + word.slice(1));
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/**
 * What a console action tells a person about a failed act. A refusal of the domain gets its
 * code's sentence (or its own message, for the codes that carry the detail a person needs);
 * anything else gets `fallback` when the action has one (code `internal`), or is thrown on.
 */
export function refusalOf(error: unknown, fallback?: string): Refusal {
  if (error instanceof DomainError) {
    const entry: { sentence: string; detail?: true } = ERROR_CODES[error.code];
    return { code: error.code, message: entry.detail ? asSentence(error.message) : entry.sentence };
  }
  if (fallback === undefined) throw error;
  return { code: 'internal', message: fallback };
}

/** The sentence for a code a console page was sent back with (`?error=`); unknown codes: none. */
export function sentenceOf(code: string | undefined): string | undefined {
  return code !== undefined && isErrorCode(code) ? ERROR_CODES[code].sentence : undefined;
}
