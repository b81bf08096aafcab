import { readingCheckpoints } from '../core/checkpoints';
import type { BilledProvider } from '../core/pricing';
import type { EngineIdentity, PageReading } from '../core/provider';
import { saveCheckpoints } from './checkpoints';
import type { AttemptFence } from './fence';
import { recordProviderCall } from './ledger';
import type { PoolClient } from './pool';

/**
 * P1 + T2: a page read in one pass is saved in one fenced transaction: the segment checkpoint
 * (every line's box), one recognize checkpoint per line that came back with text, the
 * engine call's ledger row (B1) and the job's counters. A page read in one pass therefore has
 * all its lines saved or none. Lines that came back empty keep their box and get no
 * recognize row: they are failed lines of this attempt (J2), and a later attempt reads them
 * line by line. A replayed save (the segment row is there) writes nothing more but the
 * ledger row.
 *
 * In the caller's transaction, which holds the running attempt locked (`lockRunningAttempt`;
 * P6: with the page, for update, when the caller commits in the same transaction). Returns
 * whether the save is fresh, and the indexes of the lines saved with text.
 */
export async function saveReadPage(
  client: PoolClient,
  fence: AttemptFence,
  reading: PageReading & { engine: EngineIdentity },
  call: { workspaceId: number; by: BilledProvider; occurredAt?: Date },
): Promise<{ saved: boolean; recognized: number[] }> {
  const { segment, recognized } = readingCheckpoints(fence.attemptNumber, reading);
  // The engine was paid for whether or not this save is a replay.
  await recordProviderCall(client, {
    ...call,
    jobId: fence.jobId,
    attemptNumber: fence.attemptNumber,
    operation: 'read',
    cost: reading.cost,
    outcome: 'ok',
  });
  if ((await saveCheckpoints(client, fence, [segment])) !== 1)
    return { saved: false, recognized: [] };
  await saveCheckpoints(client, fence, recognized);
  await client.query(
    `UPDATE transcription_jobs SET stage = 'recognize', total_segments = $2, completed_segments = $3,
            updated_at = now()
      WHERE id = $1`,
    [fence.jobId, reading.lines.length, recognized.length],
  );
  return { saved: true, recognized: recognized.map((r) => r.seq) };
}
