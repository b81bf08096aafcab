import pino from 'pino';

/**
 * Structured JSON logs (O2): job ids, types, sanitized status and error class. Known secret
 * fields are censored wherever they appear; transcript text and provider payloads are
 * never passed to the logger in the first place.
 */

export const REDACTED_PATHS = [
  'apiKey',
  'secret',
  'token',
  'sealedToken',
  'password',
  'authorization',
  '*.apiKey',
  '*.secret',
  '*.token',
  '*.sealedToken',
  '*.password',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
];

export function createLogger(
  name: string,
  /** The process's `LOG_LEVEL` setting (core/config.ts). */
  level: string = 'info',
  destination?: pino.DestinationStream,
): pino.Logger {
  return pino(
    {
      name,
      level,
      base: { service: name, pid: process.pid },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
