/**
 * The logger every layer receives (pino's loggers satisfy it). Fields carry ids, classes and
 * counts only: never secrets, tokens, transcript text or provider payloads (O2).
 */
export interface Logger {
  debug?(fields: Record<string, unknown>, message?: string): void;
  info(fields: Record<string, unknown>, message?: string): void;
  warn(fields: Record<string, unknown>, message?: string): void;
  error(fields: Record<string, unknown>, message?: string): void;
}
