import { readingCheckpoints } from '../core/checkpoints';
import type { EngineIdentity, PageReading } from '../core/provider';
import { type AttemptFence, lockRunningAttempt, type RunningAttempt } from './fence';
import type { Pool, PoolClient } from './pool';
import { withTransaction } from './pool';

/**
 * P1 + T2: a page read in one pass is saved in one fenced transaction: the segment checkpoint
 * (every line's box), one recognize checkpoint per line that came back with text, the
 * engine call's ledger row (B1) and the job's counters. A page read in one pass therefore has
 * all its lines saved or none. Lines that came back empty keep their box and get no
 * recognize row: they are failed lines of this attempt (J2), and a later attempt reads them
 * line by line. A replayed save (the segment row is there) writes nothing more.
 *
 * P6: `alsoWrite`, when given, runs in the same transaction after a fresh save (not a replayed
 * one), with the page, the job and the running attempt locked for update in the fence's lock
 * order: the engine step writes its polish and its commit there, so that a fresh page's read
 * and commit are one transaction. Returns the indexes of the lines saved with text, and what
 * `alsoWrite` returned (`written`).
 */
export async function saveReadPage<T = never>(
  pool: Pool,
  fence: AttemptFence,
  reading: PageReading & { engine: EngineIdentity },
  call: {
    workspaceId: number;
    provider: string;
    costMicros: number;
    occurredAt?: Date;
  },
  alsoWrite?: (client: PoolClient, attempt: RunningAttempt) => Promise<T>,
): Promise<{ saved: boolean; recognized: number[]; written?: T }> {
  const { segment, recognized } = readingCheckpoints(fence.attemptNumber, reading);
  return withTransaction(pool, async (client) => {
    // Lock order as every fenced write: the page when committing, the job, then the attempt
    // (db/fence.ts).
    const attempt = alsoWrite
      ? await lockRunningAttempt(client, fence, 'UPDATE', { lockPage: true })
      : await lockRunningAttempt(client, fence, 'SHARE');
    // The engine was paid for whether or not this save is a replay.
    await client.query(
      `INSERT INTO provider_calls (workspace_id, job_id, attempt_number, provider, operation, units, unit,
                                   cost_micros, outcome, occurred_at)
       VALUES ($1, $2, $3, $4, 'read', $5, $6, $7, 'ok', coalesce($8, now()))`,
      [
        call.workspaceId,
        fence.jobId,
        fence.attemptNumber,
        call.provider,
        reading.cost.units,
        reading.cost.unit,
        call.costMicros,
        call.occurredAt ?? null,
      ],
    );
    const inserted = await client.query(
      `INSERT INTO job_checkpoints (job_id, stage, seq, attempt_number, payload) VALUES ($1, 'segment', 0, $2, $3)
       ON CONFLICT (job_id, stage, seq) DO NOTHING`,
      [fence.jobId, fence.attemptNumber, JSON.stringify(segment.payload)],
    );
    if (inserted.rowCount !== 1) return { saved: false, recognized: [] };
    if (recognized.length > 0) {
      await client.query(
        `INSERT INTO job_checkpoints (job_id, stage, seq, attempt_number, payload)
         SELECT $1, 'recognize', (r->>'seq')::int, $2, r->'payload' FROM jsonb_array_elements($3::jsonb) r
         ON CONFLICT (job_id, stage, seq) DO NOTHING`,
        [
          fence.jobId,
          fence.attemptNumber,
          JSON.stringify(recognized.map((r) => ({ seq: r.seq, payload: r.payload }))),
        ],
      );
    }
    await client.query(
      `UPDATE transcription_jobs SET stage = 'recognize', total_segments = $2, completed_segments = $3,
              updated_at = now()
        WHERE id = $1`,
      [fence.jobId, reading.lines.length, recognized.length],
    );
    const saved = { saved: true, recognized: recognized.map((r) => r.seq) };
    return alsoWrite ? { ...saved, written: await alsoWrite(client, attempt) } : saved;
  });
}
