import type { Segment } from '../core/annotation';
import { EVENT_TYPES } from '../core/cloudevents';
import type { EngineIdentity } from '../core/provider';
import { closeAttemptIn } from './attempts';
import { appendEvent } from './events';
import {
  type AttemptFence,
  fencedAttemptOutcome,
  lockRunningAttempt,
  type RunningAttempt,
  updateRunningAttempt,
} from './fence';
import { failJobIn, jobEventData } from './jobs';
import { type Pool, type PoolClient, withTransaction } from './pool';
import { resetOutageBackoff } from './providerState';
import { commitRevision, type RevisionConflict } from './revisions';

/** J1: the one commit of a job, the page revision its attempt read the page for. */

export interface CommitInput {
  segments: Segment[];
  completed: number;
  failed: number;
  total: number;
  /** V3: lines a person edited or verified that this run kept as they were. */
  kept?: number;
  engine: EngineIdentity;
}

export type CommitResult =
  | { state: 'committed'; revision: number; eventId: number }
  | RevisionConflict;

/**
 * J1: in one transaction: the page revision after the attempt's input revision
 * (`commitRevision`, with the engine's provenance), the attempt `completed`, the job
 * `completed` with its counts, the derived full-text index, and the completion event. A CAS
 * miss writes nothing here; the caller fails the job with `conflict` (`failOnConflict`) in a
 * transaction of its own. Idempotent: a retry after a lost reply finds its own completed
 * attempt and returns it.
 */
export async function commitPageRevision(
  pool: Pool,
  fence: AttemptFence,
  input: CommitInput,
): Promise<CommitResult> {
  return withTransaction(pool, async (client) => {
    const previous = await fencedAttemptOutcome(client, fence);
    if (previous?.outcome === 'completed') {
      const event = await client.query(
        `SELECT id FROM event_outbox WHERE type = $1 AND data->>'jobId' = $2 ORDER BY id LIMIT 1`,
        [EVENT_TYPES.completed, fence.jobId],
      );
      return {
        state: 'committed',
        revision: previous.resultRevision!,
        eventId: event.rows[0]?.id ?? 0,
      };
    }
    const attempt = await lockRunningAttempt(client, fence, 'UPDATE', { lockPage: true });
    return commitPageRevisionIn(client, fence, attempt, input);
  });
}

/**
 * The writes of `commitPageRevision` in the caller's transaction, which holds the page, the
 * job and the running attempt locked for update (`lockRunningAttempt` with `lockPage`), as
 * the read of a fresh page does when it commits in its own save (P6). `canvasUri`: the page's,
 * when the caller has read it.
 */
export async function commitPageRevisionIn(
  client: PoolClient,
  fence: AttemptFence,
  attempt: RunningAttempt,
  input: CommitInput & { canvasUri?: string },
): Promise<CommitResult> {
  const written = await commitRevision(client, {
    pageId: attempt.page_id,
    canvasUri: input.canvasUri,
    expectedRevision: attempt.input_revision,
    segments: input.segments,
    language: attempt.snapshot.language,
    provenance: {
      source: 'engine',
      engine: input.engine,
      jobId: fence.jobId,
      attemptNumber: fence.attemptNumber,
    },
  });
  if (written.state === 'conflict') return written;
  const { revision } = written;
  await updateRunningAttempt(
    client,
    fence,
    `outcome = 'completed', result_revision = $4, ended_at = now(),
     completed_segments = $5, failed_segments = $6, total_segments = $7`,
    [revision, input.completed, input.failed, input.total],
  );
  await client.query(
    `UPDATE transcription_jobs
        SET status = 'completed', result_revision = $2, completed_segments = $3, failed_segments = $4,
            total_segments = $5, kept_segments = $6, stage = 'done', ended_at = now(), updated_at = now(),
            error_category = NULL, error_detail = NULL
      WHERE id = $1`,
    [fence.jobId, revision, input.completed, input.failed, input.total, input.kept ?? 0],
  );
  await resetOutageBackoff(client, attempt.snapshot.provider, attempt.workspace_id);
  const { workspaceId, data } = await jobEventData(client, fence.jobId, {
    attemptNumber: fence.attemptNumber,
    completedSegments: input.completed,
    failedSegments: input.failed,
    totalSegments: input.total,
  });
  const eventId = await appendEvent(client, {
    workspaceId,
    type: EVENT_TYPES.completed,
    subject: `transcription-jobs/${fence.jobId}`,
    data,
  });
  return { state: 'committed', revision, eventId };
}

/** J1: a CAS miss fails the job with `conflict`; nothing of the attempt's work is written. */
export async function failOnConflict(
  pool: Pool,
  fence: AttemptFence,
  currentRevision: number,
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await lockRunningAttempt(client, fence, 'UPDATE');
    await failOnConflictIn(client, fence, currentRevision);
  });
}

/** `failOnConflict` in the caller's transaction, which holds the running attempt locked. */
export async function failOnConflictIn(
  client: PoolClient,
  fence: AttemptFence,
  currentRevision: number,
): Promise<void> {
  const detail = `page changed since the input revision (now at ${currentRevision})`;
  await closeAttemptIn(client, fence, { outcome: 'failed', category: 'conflict', detail });
  await failJobIn(client, fence.jobId, 'conflict', detail, fence.attemptNumber);
}
