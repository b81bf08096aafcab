/** Typed repository errors with stable codes; the API maps them to HTTP statuses. */
export class NotFoundError extends Error {
  override name = 'NotFoundError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class ConflictError extends Error {
  override name = 'ConflictError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
