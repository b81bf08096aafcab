import { deprecatePatch, patched } from '@temporalio/workflow';

/**
 * D5: the changes of `transcriptionJob` since the first release, each behind its patch id. A
 * run begun before a change finds no marker when it replays and keeps the code it began with;
 * an id is never renamed or reused. A patch is retired (its old branch gone, `deprecatePatch`
 * in place of `patched`) once no run that lacks it is left to replay, and its call goes a
 * release after that (docs/design.md, "Patches are decided before the first local activity").
 */

/** The stage in the memo, so the Temporal UI shows it without a query. */
export const STAGE_MEMO_PATCH = 'quire-stage-memo';

/**
 * The memo's patch is decided in the run's first workflow task, before the local claim,
 * instead of at the first stage right after it (see workflows/jobProgress.ts).
 */
export const STAGE_MEMO_AT_START_PATCH = 'quire-stage-memo-at-start';

/**
 * P1: claim and commit as local activities, and no `recognize` (or `polish`) when the page was
 * read, and polished, in one pass.
 */
export const READ_ONCE_PATCH = 'quire-read-once';

/** J5: a job found canceled in the database still gets its cancel cleanup. Retired. */
export const CLEANUP_WHEN_FOUND_CANCELED_PATCH = 'cleanup-when-found-canceled';

/**
 * D1: a step that met a fleet key fault ends the attempt's run, and the story runs the same
 * attempt again after a pause, instead of each step retrying itself in place.
 */
export const KEY_FAULT_PATCH = 'quire-key-fault-reruns-attempt';

/**
 * D7: an outage of Quire's own PostgreSQL, object store or Temporal server is not the job's
 * fault. A step that stops with an `InfrastructureFault`, or an engine step that timed out
 * after it had finished and saved its work (its report was what the outage lost), runs the
 * same attempt again after a pause, uncharged; a claim that meets it claims again. Retired.
 */
export const INFRA_FAULT_PATCH = 'quire-infra-fault-reruns-attempt';

/**
 * P6: every patch above, taken at once. Each `patched()` costs a run two history events (its
 * marker and the SDK's `TemporalChangeVersion` upsert), so a run begun since this release
 * records this one marker instead of the six, and none of the others is asked. A run begun
 * before it finds no such marker when it replays and asks each patch as it always did.
 */
export const RELEASE_2026_12_PATCH = 'quire-release-2026-12';

/**
 * D14: the job's status is no longer upserted as the `QuireStatus` search attribute. Each
 * upsert is a billable Temporal action (two a page, of six), and the status is Quire's own
 * fact: its database holds it, and the console and the API list jobs by it (docs/deploy.md).
 * Asked on its own, in the run's first workflow task: it came after the release patch.
 */
export const STATUS_IN_DATABASE_PATCH = 'quire-status-in-database';

/** Whether this run takes a patch: every one, for a run begun since the release patch. */
export type PatchCheck = (patchId: string) => boolean;

/** What a run asks of its patches: which it takes, and where a retired one was asked. */
export interface PatchesOfThisRun {
  release: boolean;
  has: PatchCheck;
  /**
   * A patch added since the release patch: asked on its own in every run (a run begun under
   * the release patch never recorded it), and only in the run's first workflow task.
   */
  sinceRelease: PatchCheck;
  /**
   * A retired patch, where it used to be asked: every run takes its branch. A run begun before
   * the release patch may carry its marker, which `deprecatePatch` matches as it replays; a run
   * begun since never recorded one, and asks nothing.
   */
  retired: (patchId: string) => void;
}

/**
 * The release patch is decided in the run's first workflow task, before any other patch, like
 * every patch (docs/design.md), and its answer is kept. A run begun before it asks each other
 * patch where it always did.
 */
export function patchesOfThisRun(): PatchesOfThisRun {
  const release = patched(RELEASE_2026_12_PATCH);
  return {
    release,
    has: (patchId) => release || patched(patchId),
    sinceRelease: (patchId) => patched(patchId),
    retired: (patchId) => {
      if (!release) deprecatePatch(patchId);
    },
  };
}
