import { type CleanupTask, completeCleanup, failCleanup, fenceCleanup } from '../db/blobs';
import type { Pool } from '../db/pool';
import type { BlobStore } from './store';

/**
 * U3, one cleanup row end to end: fence (quota guards, reference check, `delete_fenced_at`),
 * delete the bytes, mark deleted. Shared by the cleanup schedule and by an ingest that
 * refuses an upload. Safe to run concurrently: the fence claims the row with SKIP LOCKED.
 */
export type CleanupOutcome =
  | { kind: 'deleted' }
  | { kind: 'referenced' }
  | { kind: 'not_due' }
  | { kind: 'retrying'; errorCode: string; retryInMs: number };

export async function processCleanup(
  pool: Pool,
  blobStore: BlobStore,
  cleanupId: number,
  now: Date,
  options: { forget?: boolean } = {},
): Promise<CleanupOutcome> {
  const fence = await fenceCleanup(pool, cleanupId, now);
  if (fence.kind !== 'fenced') return fence;
  const task = fence.task;
  try {
    await deleteTaskObjects(blobStore, task);
  } catch (error) {
    const errorCode = errorCodeOf(error);
    const retryInMs = await failCleanup(pool, task, errorCode, now);
    return { kind: 'retrying', errorCode, retryInMs };
  }
  await completeCleanup(pool, task, now, options);
  return { kind: 'deleted' };
}

/**
 * The temporary goes first: a rename can only move bytes from the temporary to the canonical
 * key, so once the temporary is gone, deleting the canonical key catches them either way.
 */
async function deleteTaskObjects(blobStore: BlobStore, task: CleanupTask): Promise<void> {
  if (task.temporaryKey && task.temporaryKey !== task.blobKey)
    await blobStore.delete(task.temporaryKey);
  await blobStore.delete(task.blobKey);
}

/** An error's code only: paths and messages may name workspace files and stay out of the DB. */
function errorCodeOf(error: unknown): string {
  const code =
    (error as { code?: unknown; name?: unknown })?.code ?? (error as { name?: unknown })?.name;
  return typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code) ? code : 'delete_failed';
}
