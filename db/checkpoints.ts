import type { Segment } from '../core/annotation';
import type {
  Checkpoint,
  CheckpointPayloads,
  CheckpointStage,
  RecognizedLine,
} from '../core/checkpoints';
import { StaleAttemptError } from '../core/failures';
import type { LineBox } from '../core/provider';
import { recordEngineJob } from './engineJobs';
import { type AttemptFence, FENCE_JOB_THEN_ATTEMPT, lockRunningAttempt } from './fence';
import { type ProviderCall, providerCallInsert } from './ledger';
import { releaseRecordedAudio } from './pages';
import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';
import { ACTIVE_STATUS_LIST } from './sql';

/**
 * T2 checkpoints: each stage's output, saved fenced by the attempt's token before the next
 * stage starts, so a new attempt resumes after it. The writes that advance the job's stage
 * and counters happen in the checkpoint's own transaction: the console never shows a stage
 * whose input is not saved. Payload types per stage: core/checkpoints.ts.
 */

/** A checkpoint row to save: a stage's output at `seq`, of this attempt. */
export type CheckpointRow = {
  [S in CheckpointStage]: { stage: S; seq: number; payload: CheckpointPayloads[S] };
}[CheckpointStage];

/**
 * T2: saves stage outputs, in the caller's transaction, which holds the running attempt
 * locked (`lockRunningAttempt`). Idempotent per (stage, seq): a retried save finds its rows
 * and writes nothing. Returns how many rows are new. The one writer of checkpoint rows but
 * the line hot path's single statement (`saveSegmentCheckpoint`).
 */
export async function saveCheckpoints(
  client: PoolClient,
  fence: AttemptFence,
  rows: readonly CheckpointRow[],
): Promise<number> {
  if (rows.length === 0) return 0;
  const inserted = await client.query(
    `INSERT INTO job_checkpoints (job_id, stage, seq, attempt_number, payload)
     SELECT $1, r->>'stage', (r->>'seq')::int, $2, r->'payload' FROM jsonb_array_elements($3::jsonb) r
     ON CONFLICT (job_id, stage, seq) DO NOTHING`,
    [
      fence.jobId,
      fence.attemptNumber,
      JSON.stringify(rows.map((r) => ({ stage: r.stage, seq: r.seq, payload: r.payload }))),
    ],
  );
  return inserted.rowCount ?? 0;
}

/**
 * D11: a job's checkpoints go in the transaction that ends it (committed, failed, canceled,
 * superseded). They exist only so that a next attempt of the same job resumes; an ended job
 * has none, and its text lives in the revision it committed or nowhere. Called after the
 * job's status is written: a fenced save racing the end either committed first (and is
 * removed here) or finds no running attempt (`StaleAttemptError`).
 */
export async function removeCheckpoints(db: Queryable, jobIds: readonly string[]): Promise<number> {
  if (jobIds.length === 0) return 0;
  const deleted = await db.query('DELETE FROM job_checkpoints WHERE job_id = ANY($1)', [jobIds]);
  return deleted.rowCount ?? 0;
}

/**
 * D11: the checkpoints an ended job still holds, removed in batches of jobs: rows written
 * before checkpoints went with their job's end (`removeCheckpoints`). Each batch is its own
 * statement, so the sweep holds no lock long and resumes where a failed pass stopped.
 */
export async function sweepEndedJobCheckpoints(db: Queryable, batchJobs = 500): Promise<number> {
  let removed = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `WITH ended AS (
         SELECT DISTINCT c.job_id FROM job_checkpoints c JOIN transcription_jobs j ON j.id = c.job_id
          WHERE j.status NOT IN ${ACTIVE_STATUS_LIST} LIMIT $1)
       DELETE FROM job_checkpoints c USING ended WHERE c.job_id = ended.job_id`,
      [batchJobs],
    );
    if (!rowCount) return removed;
    removed += rowCount;
  }
}

/** A job's checkpoints, of one stage or all, ordered by stage then seq. */
export async function loadCheckpoints(
  db: Queryable,
  jobId: string,
  stage?: CheckpointStage,
): Promise<Checkpoint[]> {
  const { rows } = await db.query(
    `SELECT stage, seq, attempt_number, payload FROM job_checkpoints
      WHERE job_id = $1 AND ($2::text IS NULL OR stage = $2) ORDER BY stage, seq`,
    [jobId, stage ?? null],
  );
  // The stage column names the payload's type: rows are written only by `saveCheckpoints`
  // and `saveSegmentCheckpoint`, which take the payload type of their stage.
  return rows.map(
    (r) =>
      ({
        stage: r.stage,
        seq: r.seq,
        attemptNumber: r.attempt_number,
        payload: r.payload,
      }) as Checkpoint,
  );
}

/**
 * T2 hot path: one recognized segment, saved in a single fenced statement, with its ledger
 * row (B1). The ledger row is written even when the token is stale: the call was paid for.
 * Returns whether the checkpoint is new; a dead token throws `StaleAttemptError`.
 */
export async function saveSegmentCheckpoint(
  db: Queryable,
  fence: AttemptFence,
  seq: number,
  payload: RecognizedLine,
  call: Omit<ProviderCall, 'jobId' | 'attemptNumber' | 'operation' | 'outcome'>,
): Promise<boolean> {
  const ledger = providerCallInsert(
    {
      ...call,
      jobId: fence.jobId,
      attemptNumber: fence.attemptNumber,
      operation: 'recognize',
      outcome: 'ok',
    },
    6,
  );
  const { rows } = await db.query<{ fenced: number; inserted: number }>(
    `WITH ${FENCE_JOB_THEN_ATTEMPT},
     saved AS (
       INSERT INTO job_checkpoints (job_id, stage, seq, attempt_number, payload)
       SELECT job_id, 'recognize', $4, $2, $5 FROM fence
       ON CONFLICT (job_id, stage, seq) DO NOTHING RETURNING 1),
     ledger AS (${ledger.sql} RETURNING 1)
     SELECT (SELECT count(*) FROM fence)::int AS fenced, (SELECT count(*) FROM saved)::int AS inserted,
            (SELECT count(*) FROM ledger)::int AS recorded`,
    [
      fence.jobId,
      fence.attemptNumber,
      fence.tokenHash,
      seq,
      JSON.stringify(payload),
      ...ledger.values,
    ],
  );
  if (rows[0]?.fenced !== 1) {
    throw new StaleAttemptError(
      `attempt ${fence.attemptNumber} of job ${fence.jobId} is no longer running`,
    );
  }
  return rows[0].inserted === 1;
}

/**
 * Live progress for the console: the job's counters follow its checkpoints. Counted, not
 * incremented, so a late or repeated write can only state the truth.
 */
export async function refreshRecognizeProgress(db: Queryable, jobId: string): Promise<void> {
  await db.query(
    `UPDATE transcription_jobs SET stage = 'recognize', updated_at = now(),
            completed_segments = (SELECT count(*) FROM job_checkpoints WHERE job_id = $1 AND stage = 'recognize')
      WHERE id = $1 AND status = 'running'`,
    [jobId],
  );
}

/** T2 `segment` done: the page's lines are saved and the job moves on to `recognize`. */
export async function saveSegmentedLines(
  pool: Pool,
  fence: AttemptFence,
  lines: LineBox[],
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await lockRunningAttempt(client, fence, 'SHARE');
    await saveCheckpoints(client, fence, [{ stage: 'segment', seq: 0, payload: { lines } }]);
    await client.query(
      `UPDATE transcription_jobs SET stage = 'recognize', total_segments = $2, updated_at = now() WHERE id = $1`,
      [fence.jobId, lines.length],
    );
  });
}

/**
 * T2 `submit` done: the engine job id is saved and recorded, the job moves on to
 * `recognize`, and our copy of the recording is released, all in one transaction, because
 * once the engine holds the recording the saved id is how we reach it. A replayed save
 * (the row was there) writes nothing more.
 */
export async function saveEngineSubmission(
  pool: Pool,
  fence: AttemptFence,
  submission: { provider: string; engineJobId: string; workspaceId: number; pageId: number },
): Promise<void> {
  const { engineJobId } = submission;
  await withTransaction(pool, async (client) => {
    await lockRunningAttempt(client, fence, 'SHARE');
    const payload = { engineJobId };
    if ((await saveCheckpoints(client, fence, [{ stage: 'submit', seq: 0, payload }])) === 0)
      return;
    await recordEngineJob(client, {
      provider: submission.provider,
      engineJobId,
      jobId: fence.jobId,
    });
    await client.query(
      `UPDATE transcription_jobs SET stage = 'recognize', updated_at = now() WHERE id = $1`,
      [fence.jobId],
    );
    await releaseRecordedAudio(client, submission.workspaceId, submission.pageId);
  });
}

/** T2 audio `recognize` done: every segment in one checkpoint, and the job's counts. */
export async function saveAudioSegments(
  pool: Pool,
  fence: AttemptFence,
  segments: Segment[],
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await lockRunningAttempt(client, fence, 'SHARE');
    await saveCheckpoints(client, fence, [{ stage: 'recognize', seq: 0, payload: { segments } }]);
    await client.query(
      `UPDATE transcription_jobs SET completed_segments = $2, total_segments = $2, updated_at = now() WHERE id = $1`,
      [fence.jobId, segments.length],
    );
  });
}
