/**
 * One redaction function for every stored and logged error (Q4, O2): provider error
 * bodies may echo keys, bearer strings and signed URLs back at us.
 */
const PATTERNS: Array<[RegExp, string]> = [
  // Credentials inside URLs: scheme://user:password@host
  [/([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]+@/gi, '$1[redacted]@'],
  // Authorization headers and bearer strings
  [/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [redacted]'],
  // key=value style secrets in query strings, JSON or prose
  [
    /\b(api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|token|secret|password|passwd|signature|x-api-key|authorization)(["']?\s*[:=]\s*["']?)[^\s"'&,;}]+/gi,
    '$1$2[redacted]',
  ],
  // Well-known key shapes: sk-..., qk_..., ghp_..., AWS access keys
  [/\b(sk|pk|rk|qk)[-_][A-Za-z0-9_-]{12,}\b/g, '[redacted-key]'],
  [/\bgh[pousr]_[A-Za-z0-9]{20,}\b/g, '[redacted-key]'],
  [/\bAKIA[0-9A-Z]{16}\b/g, '[redacted-key]'],
  // JWTs
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b/g, '[redacted-jwt]'],
  // Long opaque hex or base64url runs (tokens, signatures)
  [/\b[A-Fa-f0-9]{40,}\b/g, '[redacted-hex]'],
  [/\b[A-Za-z0-9_-]{48,}\b/g, '[redacted-opaque]'],
];

const MAX_DETAIL = 500;

export function redact(text: string): string {
  let out = text;
  for (const [pattern, replacement] of PATTERNS) {
    out = out.replace(pattern, replacement);
  }
  return out.length > MAX_DETAIL ? `${out.slice(0, MAX_DETAIL)}…` : out;
}

/** A redacted, bounded description of any thrown value, safe to store and log. */
export function redactError(error: unknown): string {
  if (error instanceof Error) return redact(`${error.name}: ${error.message}`);
  return redact(String(error));
}
