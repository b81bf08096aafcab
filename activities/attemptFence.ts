import { ApplicationFailure } from '@temporalio/activity';
import { hashToken, unsealToken } from '../core/attemptToken';
import { KEY_MISMATCH } from '../core/failures';
import { openWithAnyKey, SecretKeyMismatchError } from '../core/secretKeys';
import { type AttemptFence, readRunningAttempt } from '../db/fence';
import { installationKeyHeld } from '../db/installationKey';
import type { AttemptContext, AttemptRef, TranscriptionDeps } from './attemptContext';

/**
 * D1 + A1: an attempt as the workflow names it (`AttemptRef`, the sealed token) opened into
 * its fence with this worker's keys, and the running attempt's context read through it; and
 * whether this worker holds the installation's key at all.
 */
export function createAttemptFences(deps: TranscriptionDeps) {
  const { pool } = deps;
  const openingKeys = deps.openingKeys?.length ? deps.openingKeys : [deps.secretKey];

  /**
   * D1: a token no key of this worker opens was sealed by a process with another key: a
   * fault of the fleet's configuration, not of the attempt. It is raised as its own type,
   * which the workflow neither charges nor takes for a dead token: it waits and runs the
   * step again, on whichever worker holds the key (the attempt stays running meanwhile).
   */
  function fenceOf(ref: AttemptRef): AttemptFence {
    let token: Buffer;
    try {
      token = openWithAnyKey(openingKeys, (key) => unsealToken(ref.sealedToken, key));
    } catch (error) {
      if (!(error instanceof SecretKeyMismatchError)) throw error;
      deps.logger.error(
        { jobId: ref.jobId, attempt: ref.attemptNumber, errorClass: KEY_MISMATCH },
        "attempt token does not open with this worker's QUIRE_SECRET_KEY: the fleet runs with different keys",
      );
      throw ApplicationFailure.create({
        type: KEY_MISMATCH,
        message: error.message,
        nonRetryable: true,
      });
    }
    return { jobId: ref.jobId, attemptNumber: ref.attemptNumber, tokenHash: hashToken(token) };
  }

  /**
   * D1: whether this worker holds the installation's current key, asked of PostgreSQL at
   * most once a minute while it does. A worker that does not (a key that never was, or one
   * rotated away) would seal tokens the fleet cannot open and fail on every token the fleet
   * sealed: it claims nothing more, says so, and stops taking work. Nothing recorded yet
   * (a fleet's first start) is no mismatch.
   */
  let keyHeldUntil = 0;
  async function assertFleetKey(): Promise<void> {
    if (Date.now() < keyHeldUntil) return;
    if ((await installationKeyHeld(pool, openingKeys)) !== false) {
      keyHeldUntil = Date.now() + 60_000;
      return;
    }
    deps.logger.error(
      { errorClass: KEY_MISMATCH },
      "this worker does not hold the installation's QUIRE_SECRET_KEY: it takes no more work",
    );
    deps.onFleetKeyMismatch?.();
    throw ApplicationFailure.create({
      type: KEY_MISMATCH,
      message: "this worker does not hold the installation's QUIRE_SECRET_KEY",
      nonRetryable: true,
    });
  }

  async function attemptContext(ref: AttemptRef): Promise<AttemptContext> {
    let fence: AttemptFence;
    try {
      fence = fenceOf(ref);
    } catch (error) {
      // A token no key of ours opens: find out whether the fault is this worker's.
      if (error instanceof ApplicationFailure && error.type === KEY_MISMATCH)
        await assertFleetKey();
      throw error;
    }
    const row = await readRunningAttempt(pool, fence);
    return {
      fence,
      workspaceId: row.workspace_id,
      pageId: row.page_id,
      snapshot: row.snapshot,
      inputRevision: row.input_revision,
    };
  }

  return { fenceOf, assertFleetKey, attemptContext };
}
