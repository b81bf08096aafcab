/**
 * X4: how long a sign-in must wait, from the failures PostgreSQL counted (no I/O). Limits are
 * per account from one address and per address over every account: past a limit each further
 * try waits twice as long as the last (`delayMs`, doubling, at most `maxDelayMs`), counted
 * from the newest failure. Nothing locks an account: a guesser at one address slows only that
 * address, and the owner signing in from another is not held up by it.
 */
export interface SignInFailures {
  /** Failures of this account from this address within the window, and ms since the newest. */
  pair: number;
  pairAgoMs: number;
  /** Failures from this address (any account) within the window, and ms since the newest. */
  address: number;
  addressAgoMs: number;
}

export interface SignInLimits {
  perAccount: number;
  perAddress: number;
  delayMs: number;
  maxDelayMs: number;
}

function waitFor(failures: number, limit: number, agoMs: number, limits: SignInLimits): number {
  if (failures < limit) return 0;
  const steps = Math.min(failures - limit, 30);
  const delay = Math.min(limits.delayMs * 2 ** steps, limits.maxDelayMs);
  return Math.max(0, Math.ceil(delay - agoMs));
}

/** Milliseconds until the next try may be checked; 0: now. */
export function signInWaitMs(failures: SignInFailures, limits: SignInLimits): number {
  return Math.max(
    waitFor(failures.pair, limits.perAccount, failures.pairAgoMs, limits),
    waitFor(failures.address, limits.perAddress, failures.addressAgoMs, limits),
  );
}
