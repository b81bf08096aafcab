import { DomainError } from '../core/errors';
import type { RevisionConflict } from './revisions';

/** Typed repository errors with stable codes; web/lib/errors.ts maps them to HTTP statuses. */
export class NotFoundError extends DomainError {
  override name = 'NotFoundError';
  constructor(code: string, message: string) {
    super('not_found', code, message);
  }
}

export class ConflictError extends DomainError {
  override name = 'ConflictError';
  constructor(code: string, message: string) {
    super('conflict', code, message);
  }
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
