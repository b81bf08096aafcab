/**
 * O3: the stranded engine-job sweep. Engine copies of recordings are deleted by the job that
 * made them once its raw segments are checkpointed; a job that ended another way (canceled,
 * superseded, failed, a worker lost at the wrong moment) can leave one behind. This sweep
 * deletes, through the provider's own `deleteAudio`:
 *
 * 1. recorded engine jobs (`engine_jobs`) older than `olderThanMs` (default 6 h), not yet
 *    deleted, whose Quire job is no longer active (status not pending/running); each is then
 *    marked `deleted_at`;
 * 2. for providers that can list their jobs (`listEngineJobs`), engine jobs older than
 *    `olderThanMs` that no active Quire job references, including ones Quire never recorded
 *    (a worker that died between submit and saving the id).
 *
 * Idempotent and safe to run concurrently: `deleteAudio` is idempotent by contract, the mark
 * is `WHERE deleted_at IS NULL`, and nothing is deleted that an active job references (jobs
 * never return to an active status, and a new submit is younger than the age threshold).
 * Free of Temporal: the schedule's activity calls it.
 */
import type { CallContext, TranscriptionProvider } from '../core/provider';
import { redactError } from '../core/redact';
import type { Pool } from '../db/pool';
import { ACTIVE_STATUS_LIST } from '../db/sql';

export const STRANDED_AFTER_MS = 6 * 60 * 60_000;

/** A provider that can list the engine jobs it holds (pocketsphinx, whisper, async-speech). */
export interface EngineJobLister {
  listEngineJobs(ctx?: {
    signal?: AbortSignal;
  }): Promise<{ engineJobId: string; createdAt: Date }[]>;
}

export function canListEngineJobs(
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

function providerMap(source: ProviderSource): Map<string, TranscriptionProvider> {
  if (Array.isArray(source))
    return new Map((source as TranscriptionProvider[]).map((p) => [p.name, p]));
  const registry = source as { get(name: string): TranscriptionProvider; names(): string[] };
  return new Map(registry.names().map((name) => [name, registry.get(name)]));
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

  const { rows } = await args.pool.query(
    `SELECT e.provider, e.engine_job_id
       FROM engine_jobs e JOIN transcription_jobs j ON j.id = e.job_id
      WHERE e.deleted_at IS NULL AND e.created_at < $1 AND j.status NOT IN ${ACTIVE_STATUS_LIST}
      ORDER BY e.created_at
      LIMIT 1000`,
    [cutoff],
  );
  for (const row of rows as Array<{ provider: string; engine_job_id: string }>) {
    const provider = providers.get(row.provider);
    if (!provider) {
      result.skipped += 1;
      continue;
    }
    try {
      await provider.deleteAudio(row.engine_job_id, sweepContext('stranded-sweep', callTimeoutMs));
      const marked = await args.pool.query(
        `UPDATE engine_jobs SET deleted_at = $3 WHERE provider = $1 AND engine_job_id = $2 AND deleted_at IS NULL`,
        [row.provider, row.engine_job_id, now],
      );
      // A concurrent sweep may have marked it first; the engine copy is gone either way.
      if (marked.rowCount === 1) result.deleted += 1;
    } catch (error) {
      result.errors.push(`${row.provider}: ${redactError(error)}`);
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
    const live = await args.pool.query(
      `SELECT e.engine_job_id FROM engine_jobs e JOIN transcription_jobs j ON j.id = e.job_id
        WHERE e.provider = $1 AND e.engine_job_id = ANY($2::text[]) AND j.status IN ${ACTIVE_STATUS_LIST}`,
      [name, old.map((j) => j.engineJobId)],
    );
    const referenced = new Set(
      (live.rows as Array<{ engine_job_id: string }>).map((r) => r.engine_job_id),
    );
    for (const job of old) {
      if (referenced.has(job.engineJobId)) continue;
      try {
        await provider.deleteAudio(job.engineJobId, sweepContext('stranded-sweep', callTimeoutMs));
        const marked = await args.pool.query(
          `UPDATE engine_jobs SET deleted_at = $3 WHERE provider = $1 AND engine_job_id = $2 AND deleted_at IS NULL`,
          [name, job.engineJobId, now],
        );
        if (marked.rowCount === 1) result.deleted += 1;
        else result.unrecordedDeleted += 1;
      } catch (error) {
        result.errors.push(`${name}: ${redactError(error)}`);
      }
    }
  }
  return result;
}
