import { DomainError, type ErrorKind } from '@quire/core/errors';

/**
 * The one place a refusal becomes an HTTP answer (SPEC §7): `{error:{code,message}}` with the
 * status its kind calls for. The API routes, the ingest and the benchmark server answer through
 * it; console actions read the same codes. Pure, so tests can ask what status an error gets.
 */
export const STATUS_OF_KIND: Record<ErrorKind, number> = {
  malformed: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unsupported: 415,
  invalid: 422,
  quota: 429,
  rate_limited: 429,
  unavailable: 503,
};

/** A refusal decided by the HTTP layer itself (headers, body size, JSON, path), status and all. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers?: HeadersInit,
  ) {
    super(message);
  }
}

export interface HttpError {
  status: number;
  body: { error: { code: string; message: string } & Record<string, unknown> };
  headers?: HeadersInit;
}

/** The answer for a known refusal; undefined for anything else (an internal error). */
export function httpErrorOf(error: unknown): HttpError | undefined {
  if (error instanceof ApiError) {
    return {
      status: error.status,
      body: { error: { code: error.code, message: error.message } },
      headers: error.headers,
    };
  }
  if (error instanceof DomainError) {
    return {
      status: STATUS_OF_KIND[error.kind],
      body: { error: { code: error.code, message: error.message, ...error.details } },
    };
  }
  return undefined;
}
