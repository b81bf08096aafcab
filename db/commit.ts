import type { Segment } from '../core/annotation';
import { EVENT_TYPES } from '../core/cloudevents';
import type { EngineIdentity } from '../core/provider';
import { closeAttempt } from './attempts';
import { appendEvent } from './events';
import {
  type AttemptFence,
  fencedAttemptOutcome,
  type RunningAttempt,
  updateRunningAttempt,
} from './fence';
import { jobsEnded } from './jobEnds';
import { jobEventData } from './jobs';
import type { PoolClient, Queryable } from './pool';
import { resetOutageBackoff } from './providerState';
import {
  commitRevision,
  type RevisionCommitted,
  type RevisionConflict,
  type RevisionWriteOutcome,
} from './revisions';

/** J1: the one commit of a job, the page revision its attempt read the page for. */

export interface CommitInput {
  segments: Segment[];
  completed: number;
  failed: number;
  total: number;
  /** V3: lines a person edited or verified that this run kept as they were. */
  kept?: number;
  engine: EngineIdentity;
  /** V8: an image page's lines, each what its line of the image says. */
  lineText?: 'diplomatic';
  /** The page's canvas URI, when the caller has read the page. */
  canvasUri?: string;
}

/**
 * J1: the revision an attempt committed, when it has: a commit retried after its reply was
 * lost finds its own attempt completed, and writes nothing again.
 */
export async function committedRevision(
  db: Queryable,
  fence: AttemptFence,
): Promise<RevisionCommitted | undefined> {
  const previous = await fencedAttemptOutcome(db, fence);
  return previous?.outcome === 'completed'
    ? { state: 'committed', revision: previous.resultRevision! }
    : undefined;
}

/**
 * J1: the commit, in the caller's transaction, which holds the page, the job and the running
 * attempt locked for update (`lockRunningAttempt` with `lockPage`): the page revision after
 * the attempt's input revision (`commitRevision`, with the engine's provenance), the attempt
 * `completed`, the job `completed` with its counts, the derived full-text index, and the
 * completion event. A compare-and-set miss writes nothing here and is returned: the caller
 * fails the job with `conflict` (`failOnConflict`).
 */
export async function commitPageRevision(
  client: PoolClient,
  fence: AttemptFence,
  attempt: RunningAttempt,
  input: CommitInput,
): Promise<RevisionWriteOutcome> {
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
      ...(input.lineText ? { lineText: input.lineText } : {}),
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
  // D11: the transcript is in the revision now; what the attempts saved on the way goes.
  await jobsEnded(client, [fence.jobId]);
  await resetOutageBackoff(client, attempt.snapshot.provider, attempt.workspace_id);
  const { workspaceId, data } = await jobEventData(client, fence.jobId, {
    attemptNumber: fence.attemptNumber,
    completedSegments: input.completed,
    failedSegments: input.failed,
    totalSegments: input.total,
  });
  await appendEvent(client, {
    workspaceId,
    type: EVENT_TYPES.completed,
    subject: `transcription-jobs/${fence.jobId}`,
    data,
  });
  return written;
}

/**
 * J1: a compare-and-set miss fails the job with `conflict`; nothing of the attempt's work is
 * written. In the caller's transaction, which holds the running attempt locked for update.
 */
export async function failOnConflict(
  client: PoolClient,
  fence: AttemptFence,
  conflict: RevisionConflict,
): Promise<void> {
  const detail = `page changed since the input revision (now at ${conflict.currentRevision})`;
  // A failed close fails the job whatever the attempts used: no cap is read.
  await closeAttempt(
    client,
    fence,
    { outcome: 'failed', category: 'conflict', detail },
    Number.POSITIVE_INFINITY,
  );
}
