import { processCleanup } from '../blobs/cleanup';
import { makePageDerivative } from '../blobs/derivatives';
import { type BlobStore, STALE_TEMPORARY_AGE_MS } from '../blobs/store';
import type { QuireClient } from '../client';
import {
  type AudioEngine,
  type CallContext,
  isAudioEngine,
  type TranscriptionProvider,
} from '../core/provider';
import { redactError } from '../core/redact';
import {
  dueCleanupIds,
  knownObjectKeys,
  scheduleBlobDeletion,
  unreferencedBlobs,
} from '../db/blobs';
import { sweepEndedJobCheckpoints } from '../db/checkpoints';
import { pagesNeedingDerivative } from '../db/derivatives';
import {
  engineJobsHeldByActiveJobs,
  listStrandedEngineJobs,
  markEngineCopyDeleted,
} from '../db/engineJobs';
import { readMaintenanceCursor, writeMaintenanceCursor } from '../db/maintenanceCursors';
import { ensureTimePartitions } from '../db/partitions';
import type { Pool } from '../db/pool';
import { purgeOldEvents, purgeOldProviderCalls } from '../db/retention';

/**
 * Maintenance run as Temporal Schedules (O3) on their own task queue: the reconciler, the
 * blob cleanup, the orphan sweep, the stranded engine-job sweep and event retention. Each
 * body is idempotent and safe to run concurrently with itself, with the others and with
 * ingests and jobs; the activities below only bind them to the worker's dependencies.
 */

export interface MaintenanceDeps {
  pool: Pool;
  blobStore: BlobStore;
  providers: ProviderSource;
  /** J6: the typed client starts the jobs it recorded but never started. */
  client: Pick<QuireClient, 'reconcile' | 'reconcileLostWorkflows'>;
  eventRetentionDays: number;
  /** D11: months of the provider-call ledger older than this are dropped. */
  providerCallRetentionDays: number;
  /** U2: the installation's quota from configuration (the settings row overrides it). */
  globalQuotaBytes?: number | null;
}

export function createMaintenanceActivities(deps: MaintenanceDeps) {
  const { pool, blobStore } = deps;
  // Activity names are what the maintenance workflows call: they stay as recorded.
  return {
    /** J6: starts jobs recorded but never started. Idempotent: "already started" is fine. */
    async reconcileUnstartedJobs(input: { olderThanMs: number }): Promise<{ started: number }> {
      return deps.client.reconcile(input.olderThanMs);
    },
    /** D4: active jobs whose workflow no longer runs are continued, canceled or failed. */
    async reconcileLostWorkflows(input: {
      olderThanMs: number;
    }): Promise<{ checked: number; continued: number; canceled: number; failed: number }> {
      return deps.client.reconcileLostWorkflows(input.olderThanMs);
    },
    async runBlobCleanup(): Promise<Record<string, number>> {
      return { ...(await runBlobCleanup({ pool, blobStore })) };
    },
    async sweepOrphans(): Promise<Record<string, number>> {
      return { ...(await sweepOrphans({ pool, blobStore })) };
    },
    /** I4: pyramidal derivatives for image pages that have none. */
    async buildImageDerivatives(): Promise<Record<string, number>> {
      return {
        ...(await buildImageDerivatives({
          pool,
          blobStore,
          globalQuotaBytes: deps.globalQuotaBytes ?? null,
          engineWaiting: () => engineWorkAhead(deps.providers),
        })),
      };
    },
    async sweepStrandedEngineJobs(): Promise<Record<string, unknown>> {
      return { ...(await sweepStrandedEngineJobs({ pool, providers: deps.providers })) };
    },
    /**
     * O3 + D11: the months ahead of the time-partitioned tables made ready first (a row never
     * finds its month missing); then the months past retention of events (with their
     * deliveries) and of the provider-call ledger dropped, and ended jobs' checkpoints removed.
     */
    async purgeOldEvents(): Promise<Record<string, number>> {
      const addedPartitions = (await ensureTimePartitions(pool)).length;
      const purged = await purgeOldEvents(pool, deps.eventRetentionDays);
      const calls = await purgeOldProviderCalls(pool, deps.providerCallRetentionDays);
      const endedCheckpoints = await sweepEndedJobCheckpoints(pool);
      return {
        addedPartitions,
        ...purged,
        providerCallMonthsDropped: calls.droppedMonths,
        providerCallMonthsBusy: calls.busyMonths,
        endedCheckpoints,
      };
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;

// --- U2/U3: blob cleanup and the orphan sweep -------------------------------------------
// Every row is claimed by the U3 fence under SKIP LOCKED, and an object is deleted only when
// no row of Quire still accounts for it.

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
  /** Objects this run's slice of the listing held. */
  listed: number;
  /** 1 when the slice reached the end of the store (the next run starts again from the top). */
  wrapped: number;
}

/** The orphan sweep's place in the store's listing, kept between runs. */
export const ORPHAN_SWEEP_CURSOR = 'orphan-sweep';

/**
 * The safety net behind U2: stale temporaries, unreferenced blob rows (handed to the fenced
 * cleanup, never deleted here) and objects that no blob or pending cleanup row knows, each
 * only once older than `graceMs` (default one hour). D13: a run lists at most `sliceObjects`
 * objects from where the last one stopped, so a store of any size is swept in bounded runs.
 */
export async function sweepOrphans(options: {
  pool: Pool;
  blobStore: BlobStore;
  now?: Date;
  graceMs?: number;
  limit?: number;
  sliceObjects?: number;
}): Promise<OrphanSweepReport> {
  const now = options.now ?? new Date();
  const graceMs = options.graceMs ?? STALE_TEMPORARY_AGE_MS;
  const before = new Date(now.getTime() - graceMs);
  const sliceObjects = options.sliceObjects ?? 10_000;

  const orphans = await unreferencedBlobs(options.pool, before, options.limit ?? 1000);
  for (const blob of orphans) {
    await scheduleBlobDeletion(options.pool, blob.workspaceId, blob.key, { reason: 'orphan', now });
  }

  const after = await readMaintenanceCursor(options.pool, ORPHAN_SWEEP_CURSOR);
  let removedObjects = 0;
  let removedTemporaries = 0;
  let listed = 0;
  let last: string | undefined;
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
  for await (const object of options.blobStore.list({ after, temporaries: true })) {
    listed++;
    last = object.key;
    if (object.temporary) {
      // U1: a temporary an upload abandoned; a recent one may still be being written.
      if (object.modifiedAt < before) {
        await options.blobStore.delete(object.key);
        removedTemporaries++;
      }
    } else {
      chunk.push(object);
      if (chunk.length >= 500) await flush();
    }
    if (listed >= sliceObjects) break;
  }
  if (chunk.length > 0) await flush();
  const wrapped = listed < sliceObjects;
  await writeMaintenanceCursor(options.pool, ORPHAN_SWEEP_CURSOR, wrapped ? '' : (last ?? ''));
  return {
    removedTemporaries,
    scheduledBlobs: orphans.length,
    removedObjects,
    listed,
    wrapped: wrapped ? 1 : 0,
  };
}

// --- I4: image derivatives -------------------------------------------------------------
// Each image page gets its pyramidal derivative once, after ingest. The Image API answers from
// the master until it exists. A page whose try failed is left for `retryAfterMs` (a full
// quota may be raised); one whose master does not decode is never tried again.

export interface DerivativeReport {
  made: number;
  failed: number;
  /** D13: 1 when the run stopped early because engine work was waiting for a slot. */
  yielded: number;
  /** Megapixels of the pages made, and the time their pyramids took to build. */
  megapixels: number;
  buildMs: number;
}

export async function buildImageDerivatives(options: {
  pool: Pool;
  blobStore: BlobStore;
  globalQuotaBytes?: number | null;
  now?: () => Date;
  /** Pages per run; the rest wait for the next run. */
  limit?: number;
  /** Stop taking new pages after this long, well inside the activity's timeout. */
  budgetMs?: number;
  retryAfterMs?: number;
  /**
   * D13 with P8: engine calls of this process waiting for a slot, or reading a page a person
   * waits for (`engineWorkAhead`). Derivatives are made between engine work, never ahead of it
   * nor beside a person's page: while any is, the run stops and the next one goes on.
   */
  engineWaiting?: () => number;
}): Promise<DerivativeReport> {
  const now = options.now ?? (() => new Date());
  const started = Date.now();
  const budgetMs = options.budgetMs ?? 4 * 60_000;
  const retryBefore = new Date(now().getTime() - (options.retryAfterMs ?? 60 * 60_000));
  const report: DerivativeReport = { made: 0, failed: 0, yielded: 0, megapixels: 0, buildMs: 0 };
  const pages = await pagesNeedingDerivative(options.pool, retryBefore, options.limit ?? 50);
  for (const page of pages) {
    if (Date.now() - started > budgetMs) break;
    if ((options.engineWaiting?.() ?? 0) > 0) {
      report.yielded = 1;
      break;
    }
    const outcome = await makePageDerivative(
      {
        pool: options.pool,
        blobStore: options.blobStore,
        globalQuotaBytes: options.globalQuotaBytes,
        now,
      },
      page,
    );
    if (outcome.kind === 'made') {
      report.made++;
      report.megapixels += outcome.megapixels;
      report.buildMs += outcome.buildMs;
    } else {
      report.failed++;
    }
  }
  report.megapixels = Math.round(report.megapixels * 1000) / 1000;
  report.buildMs = Math.round(report.buildMs);
  return report;
}

// --- O3: the stranded engine-job sweep --------------------------------------------------
// Engine copies of recordings are deleted by the job that made them once its raw segments
// are checkpointed; a job that ended another way (canceled, superseded, failed, a worker lost
// at the wrong moment) can leave one behind. The sweep deletes, through the provider's own
// `deleteAudio`:
//
// 1. recorded engine jobs older than `olderThanMs` (default 6 h), not yet deleted, whose
//    Quire job is no longer active; each is then marked `deleted_at`;
// 2. for providers that can list their jobs (`listEngineJobs`), engine jobs older than
//    `olderThanMs` that no active Quire job references, including ones Quire never recorded
//    (a worker that died between submit and saving the id).
//
// Safe to run concurrently: `deleteAudio` is idempotent by contract, the mark only takes an
// unmarked row, and nothing is deleted that an active job references (jobs never return to
// an active status, and a new submit is younger than the age threshold).

export const STRANDED_AFTER_MS = 6 * 60 * 60_000;

/** A provider that can list the engine jobs it holds (pocketsphinx, whisper, async-speech). */
export interface EngineJobLister {
  listEngineJobs(ctx?: {
    signal?: AbortSignal;
  }): Promise<{ engineJobId: string; createdAt: Date }[]>;
}

function canListEngineJobs(
  provider: TranscriptionProvider,
): provider is TranscriptionProvider & EngineJobLister {
  return typeof (provider as Partial<EngineJobLister>).listEngineJobs === 'function';
}

export type ProviderSource =
  | readonly TranscriptionProvider[]
  | { get(name: string): TranscriptionProvider; names(): string[] };

export interface SweepResult {
  /** Recorded engine jobs deleted and marked. */
  deleted: number;
  /** Engine jobs found only by listing, deleted. */
  unrecordedDeleted: number;
  /** Recorded engine jobs of a provider this worker does not have. */
  skipped: number;
  /** Redacted, one per failure; the sweep goes on past them. */
  errors: string[];
}

/**
 * Engine work of this process that derivatives make way for, over every engine with a pool:
 * calls waiting for a slot (P2), and people's calls running (P8), which with room for people
 * (EnginePool) need never wait, yet share the cores with whatever else the process runs.
 */
export function engineWorkAhead(source: ProviderSource): number {
  let ahead = 0;
  for (const provider of providerList(source)) {
    const stats = (
      provider as { poolStats?: () => { waiting: number; people?: number } }
    ).poolStats?.();
    ahead += (stats?.waiting ?? 0) + (stats?.people ?? 0);
  }
  return ahead;
}

function providerList(source: ProviderSource): TranscriptionProvider[] {
  if (Array.isArray(source)) return source as TranscriptionProvider[];
  const registry = source as { get(name: string): TranscriptionProvider; names(): string[] };
  return registry.names().map((name) => registry.get(name));
}

/** The engines that hold recordings, by name: only they have engine jobs to delete. */
function providerMap(source: ProviderSource): Map<string, AudioEngine> {
  return new Map(
    providerList(source)
      .filter(isAudioEngine)
      .map((p) => [p.name, p]),
  );
}

function sweepContext(callKey: string, timeoutMs: number): CallContext {
  return { signal: AbortSignal.timeout(timeoutMs), language: 'und', options: {}, callKey };
}

export async function sweepStrandedEngineJobs(args: {
  pool: Pool;
  providers: ProviderSource;
  olderThanMs?: number;
  now?: Date;
  /** Per provider call; default 60 s. */
  callTimeoutMs?: number;
}): Promise<SweepResult> {
  const olderThanMs = args.olderThanMs ?? STRANDED_AFTER_MS;
  const now = args.now ?? new Date();
  const cutoff = new Date(now.getTime() - olderThanMs);
  const callTimeoutMs = args.callTimeoutMs ?? 60_000;
  const providers = providerMap(args.providers);
  const result: SweepResult = { deleted: 0, unrecordedDeleted: 0, skipped: 0, errors: [] };

  for (const stranded of await listStrandedEngineJobs(args.pool, cutoff)) {
    const provider = providers.get(stranded.provider);
    if (!provider) {
      result.skipped += 1;
      continue;
    }
    try {
      await provider.deleteAudio(
        stranded.engineJobId,
        sweepContext('stranded-sweep', callTimeoutMs),
      );
      // A concurrent sweep may have marked it first; the engine copy is gone either way.
      if (await markEngineCopyDeleted(args.pool, stranded, now)) result.deleted += 1;
    } catch (error) {
      result.errors.push(`${stranded.provider}: ${redactError(error)}`);
    }
  }

  for (const [name, provider] of providers) {
    if (!canListEngineJobs(provider)) continue;
    let listed: { engineJobId: string; createdAt: Date }[];
    try {
      listed = await provider.listEngineJobs({ signal: AbortSignal.timeout(callTimeoutMs) });
    } catch (error) {
      result.errors.push(`${name}: ${redactError(error)}`);
      continue;
    }
    const old = listed.filter((j) => j.createdAt.getTime() < cutoff.getTime());
    if (old.length === 0) continue;
    const referenced = await engineJobsHeldByActiveJobs(
      args.pool,
      name,
      old.map((j) => j.engineJobId),
    );
    for (const job of old) {
      if (referenced.has(job.engineJobId)) continue;
      try {
        await provider.deleteAudio(job.engineJobId, sweepContext('stranded-sweep', callTimeoutMs));
        if (
          await markEngineCopyDeleted(
            args.pool,
            { provider: name, engineJobId: job.engineJobId },
            now,
          )
        )
          result.deleted += 1;
        else result.unrecordedDeleted += 1;
      } catch (error) {
        result.errors.push(`${name}: ${redactError(error)}`);
      }
    }
  }
  return result;
}
