/**
 * The refusals of the domain: a stable `code` the API shows as is, and a `kind` saying what
 * sort of refusal it is. Core, db and ingest raise these and know nothing of HTTP; the one
 * mapper in web/lib/errors.ts turns a kind into a status at the edge.
 */
export type ErrorKind =
  /** The request cannot be read at all (a bad body, token or field name). */
  | 'malformed'
  /** Readable but refused: a value out of bounds, a rule of the domain. */
  | 'invalid'
  /** More bytes, files or fields than allowed. */
  | 'too_large'
  /** A media or content type Quire does not take. */
  | 'unsupported'
  | 'not_found'
  /** R1: the principal is in the workspace, but its role or key scope does not allow the act. */
  | 'forbidden'
  /** R2: not signed in, or the credentials are wrong. */
  | 'unauthenticated'
  /** R2: too many attempts; try again later. */
  | 'rate_limited'
  /** The thing exists but is in a state that forbids the act. */
  | 'conflict'
  /** The storage quota would be exceeded. */
  | 'quota'
  /** A dependency did not answer or a reservation lapsed: the same request may succeed later. */
  | 'unavailable';

export class DomainError extends Error {
  override name = 'DomainError';
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    /** Fields the error body carries beside code and message (the file it is about, ...). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}
