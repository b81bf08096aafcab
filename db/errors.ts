import { DomainError, type ErrorCodeOfKind, type ErrorKind } from '../core/errors';
import type { RevisionConflict } from './revisions';

/** Typed repository errors with stable codes; web/lib/errors.ts maps them to HTTP statuses. */
export class NotFoundError extends DomainError {
  override name = 'NotFoundError';
  constructor(
    override readonly code: ErrorCodeOfKind<'not_found'>,
    message?: string,
  ) {
    super(code, message);
  }
}

export class ConflictError extends DomainError {
  override name = 'ConflictError';
  constructor(
    override readonly code: ErrorCodeOfKind<'conflict'>,
    message?: string,
  ) {
    super(code, message);
  }
}

/**
 * A thing the request's body names (not its URL) does not exist: the request is invalid (422),
 * the resource addressed is there. The code is the thing's own not-found code.
 */
export class MissingReferenceError extends DomainError {
  override name = 'MissingReferenceError';
  override readonly kind: ErrorKind = 'invalid';
  constructor(code: ErrorCodeOfKind<'not_found'>, message?: string) {
    super(code, message);
  }
}

/**
 * A one-time link that no longer opens anything is not found to whoever holds it, whatever
 * closed it (used, revoked, expired): the code says which, the status gives nothing away.
 */
export class ClosedLinkError extends DomainError {
  override name = 'ClosedLinkError';
  override readonly kind: ErrorKind = 'not_found';
}

/**
 * A page revision written against a revision the page is no longer at (`RevisionConflict` of
 * db/revisions.ts), thrown by a writer that cannot go on without it: an ingest writing a new
 * page's revision 0 or its imported revision 1.
 */
export class RevisionConflictError extends ConflictError {
  override name = 'RevisionConflictError';
  constructor(
    readonly pageId: number,
    readonly conflict: RevisionConflict,
  ) {
    super('revision_conflict', `page ${pageId} is now at revision ${conflict.currentRevision}`);
  }
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
