import type { EngineIdentity, PageReading } from '../core/provider';
import { type AttemptFence, lockRunningAttempt } from './fence';
import type { Pool } from './pool';
import { withTransaction } from './pool';

/**
 * P1 + T2: a page read in one pass is saved in one fenced transaction: the segment checkpoint
 * (every line's box), one recognize checkpoint per line that came back with text, the
 * engine call's ledger row (B1) and the job's counters. A page read in one pass therefore has
 * all its lines saved or none. Lines that came back empty keep their box and get no
 * recognize row: they are failed lines of this attempt (J2), and a later attempt reads them
 * line by line. A replayed save (the segment row is there) writes nothing more.
 * Returns the indexes of the lines saved with text.
 */
export async function saveReadPage(
  pool: Pool,
  fence: AttemptFence,
  reading: PageReading & { engine: EngineIdentity },
  call: {
    workspaceId: number;
    provider: string;
    costMicros: number;
    occurredAt?: Date;
  },
): Promise<{ saved: boolean; recognized: number[] }> {
  const lines = reading.lines.map((line) =>
    line.confidence === undefined
      ? { box: line.box }
      : { box: line.box, confidence: line.confidence },
  );
  const recognized = reading.lines.flatMap((line, seq) =>
    line.text.trim() === ''
      ? []
      : [{ seq, payload: { text: line.text, confidence: line.confidence ?? null } }],
  );
  return withTransaction(pool, async (client) => {
    // Lock order as every fenced write: the job, then the attempt (db/fence.ts).
    await lockRunningAttempt(client, fence, 'SHARE');
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
    const segment = await client.query(
      `INSERT INTO job_checkpoints (job_id, stage, seq, attempt_number, payload) VALUES ($1, 'segment', 0, $2, $3)
       ON CONFLICT (job_id, stage, seq) DO NOTHING`,
      [fence.jobId, fence.attemptNumber, JSON.stringify({ lines, engine: reading.engine })],
    );
    if (segment.rowCount !== 1) return { saved: false, recognized: [] };
    if (recognized.length > 0) {
      await client.query(
        `INSERT INTO job_checkpoints (job_id, stage, seq, attempt_number, payload)
         SELECT $1, 'recognize', (r->>'seq')::int, $2, r->'payload' FROM jsonb_array_elements($3::jsonb) r
         ON CONFLICT (job_id, stage, seq) DO NOTHING`,
        [fence.jobId, fence.attemptNumber, JSON.stringify(recognized)],
      );
    }
    await client.query(
      `UPDATE transcription_jobs SET stage = 'recognize', total_segments = $2, completed_segments = $3,
              updated_at = now()
        WHERE id = $1`,
      [fence.jobId, lines.length, recognized.length],
    );
    return { saved: true, recognized: recognized.map((r) => r.seq) };
  });
}
