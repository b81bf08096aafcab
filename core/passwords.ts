import { hash, verify } from '@node-rs/argon2';

/**
 * R2: local passwords, stored as argon2id (OWASP's minimum parameters: 19 MiB, 2 passes, 1
 * lane). A password is 12 to 256 characters; nothing else is imposed.
 */
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 256;

const PARAMETERS = {
  // Algorithm.Argon2id (a const enum, so written as its value).
  algorithm: 2,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;

export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) {
    return `a password has at least ${MIN_PASSWORD_LENGTH} characters`;
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    return `a password has at most ${MAX_PASSWORD_LENGTH} characters`;
  }
  return undefined;
}

export function hashPassword(password: string): Promise<string> {
  return hash(password, PARAMETERS);
}

/**
 * Whether the password matches the stored hash. An account without a password (single
 * sign-on only) is checked against a throwaway hash, so a wrong email takes as long as a
 * wrong password and says nothing of which accounts exist.
 */
export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  const target = stored ?? (await decoyHash());
  try {
    const matches = await verify(target, password);
    return stored !== null && matches;
  } catch {
    return false;
  }
}

let decoy: Promise<string> | undefined;
function decoyHash(): Promise<string> {
  decoy ??= hash('quire-no-such-account-password', PARAMETERS);
  return decoy;
}

/** Emails are compared lowercased and trimmed; the shape is checked loosely. */
export function normalizeEmail(raw: string): string | undefined {
  const email = raw.trim().toLowerCase();
  return /^[^\s@]+@[^\s@]+$/.test(email) && email.length <= 320 ? email : undefined;
}
