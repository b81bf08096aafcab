import { DomainError } from '../core/errors';

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

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
