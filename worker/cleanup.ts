import { type BlobStore, STALE_TEMPORARY_AGE_MS } from '../blobs/store';
import {
  dueCleanupIds,
  knownObjectKeys,
  scheduleBlobDeletion,
  unreferencedBlobs,
} from '../db/blobs';
import type { Pool } from '../db/pool';
import { processCleanup } from '../ingest/deletion';

/**
 * Maintenance run as Temporal Schedules (O3): the cleanup dispatch and the orphan sweep.
 * Both are idempotent and safe to run concurrently with each other, with themselves and with
 * ingests: every row is claimed by the U3 fence under SKIP LOCKED, and an object is deleted
 * only when no row of Quire still accounts for it.
 */

export interface BlobCleanupReport {
  deleted: number;
  /** Rows whose blob turned out to be referenced: retired, nothing deleted. */
  referenced: number;
  /** Deletions that failed and were rescheduled (backoff capped at one hour). */
  retrying: number;
}

/**
 * Deletes what due cleanup rows hold: staged reservations past `reserve_until` (an ingest
 * that crashed or stalled), rows handed over for deletion, failing rows whose retry is due.
 */
export async function runBlobCleanup(options: {
  pool: Pool;
  blobStore: BlobStore;
  now?: Date;
  batchSize?: number;
}): Promise<BlobCleanupReport> {
  const now = options.now ?? new Date();
  const batchSize = options.batchSize ?? 100;
  const report: BlobCleanupReport = { deleted: 0, referenced: 0, retrying: 0 };
  const seen = new Set<number>();
  for (;;) {
    const ids = (await dueCleanupIds(options.pool, now, batchSize + seen.size)).filter(
      (id) => !seen.has(id),
    );
    if (ids.length === 0) return report;
    for (const id of ids.slice(0, batchSize)) {
      seen.add(id);
      const outcome = await processCleanup(options.pool, options.blobStore, id, now);
      if (outcome.kind === 'deleted') report.deleted++;
      else if (outcome.kind === 'referenced') report.referenced++;
      else if (outcome.kind === 'retrying') report.retrying++;
    }
  }
}

export interface OrphanSweepReport {
  /** `.quire-upload-*` temporaries older than an hour, removed (U1). */
  removedTemporaries: number;
  /** Blob rows no page references, handed to the cleanup. */
  scheduledBlobs: number;
  /** Objects no row accounts for, removed. */
  removedObjects: number;
}

/**
 * The safety net behind U2: stale temporaries, unreferenced blob rows (handed to the fenced
 * cleanup, never deleted here) and objects that no blob or pending cleanup row knows, each
 * only once older than `graceMs` (default one hour).
 */
export async function sweepOrphans(options: {
  pool: Pool;
  blobStore: BlobStore;
  now?: Date;
  graceMs?: number;
  limit?: number;
}): Promise<OrphanSweepReport> {
  const now = options.now ?? new Date();
  const graceMs = options.graceMs ?? STALE_TEMPORARY_AGE_MS;
  const before = new Date(now.getTime() - graceMs);
  const { removed } = await options.blobStore.sweepStaleTemporaries(graceMs, now);

  const orphans = await unreferencedBlobs(options.pool, before, options.limit ?? 1000);
  for (const blob of orphans) {
    await scheduleBlobDeletion(options.pool, blob.workspaceId, blob.key, { reason: 'orphan', now });
  }

  let removedObjects = 0;
  let chunk: Array<{ key: string; modifiedAt: Date }> = [];
  const flush = async () => {
    const known = await knownObjectKeys(
      options.pool,
      chunk.map((o) => o.key),
    );
    for (const object of chunk) {
      if (known.has(object.key) || object.modifiedAt >= before) continue;
      // Checked again one by one: a row may have appeared since the batch query.
      if ((await knownObjectKeys(options.pool, [object.key])).size > 0) continue;
      await options.blobStore.delete(object.key);
      removedObjects++;
    }
    chunk = [];
  };
  for await (const object of options.blobStore.list()) {
    chunk.push(object);
    if (chunk.length >= 500) await flush();
  }
  if (chunk.length > 0) await flush();
  return { removedTemporaries: removed, scheduledBlobs: orphans.length, removedObjects };
}
