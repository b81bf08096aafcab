import { ERROR_CODES, type ErrorCode, type ErrorKind } from './errorCodes';

export type { ErrorCode, ErrorCodeOfKind, ErrorKind } from './errorCodes';

/**
 * The refusals of the domain: a stable `code` the API shows as is, declared with its kind and
 * its sentence in core/errorCodes.ts. Core, db and ingest raise these and know nothing of HTTP;
 * the one mapper in web/lib/errors.ts turns the kind into a status at the edge.
 *
 * Every error class of Quire takes (code, message?, details?) in that order; a message left out
 * is the code's sentence.
 */
export class DomainError extends Error {
  override name = 'DomainError';
  /** What sort of refusal this is; the registry's, unless a subclass states its own reason. */
  readonly kind: ErrorKind;
  constructor(
    readonly code: ErrorCode,
    message?: string,
    /** Fields the error body carries beside code and message (the file it is about, ...). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message ?? ERROR_CODES[code].sentence);
    this.kind = ERROR_CODES[code].kind;
  }
}
