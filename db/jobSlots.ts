import type { MediaKind } from '../core/media';
import { JOB_COLUMNS, type JobRow, lockFleetSlots, lockWorkspaceSlots, toJob } from './jobs';
import { type Pool, type Queryable, withTransaction } from './pool';
import { ACTIVE_STATUS_LIST } from './sql';

/**
 * M4: the active-job cap of a workspace. A job holds a slot while it is active (pending or
 * running) and admitted. A job recorded while its workspace has a cap is `awaiting_slot`: it
 * stays `pending`, without a workflow, until `admitWaitingJobs` admits it, oldest first (by
 * creation time, then id), as slots free. Admission for one workspace is serialised by an
 * advisory lock taken first in its own transaction, before any job row, so it never joins a
 * lock cycle with claims and cancels (which lock jobs and never take it); recording a job in
 * a capped workspace takes it first too (db/jobs.ts).
 */
/** How many waiting jobs one admission pass may admit when there is no cap (a lifted cap). */
const ADMIT_BATCH = 500;

/**
 * Admits the oldest waiting jobs of a workspace into the slots free under its cap (all of
 * them, a batch at a time, when the cap was lifted). Returns the admitted jobs, whose
 * workflows the caller starts; a crash before that leaves them to the reconciler (J6).
 */
export async function admitWaitingJobs(
  pool: Pool,
  workspaceId: number,
  /** D14: open workflows the installation allows at once (QUIRE_FLEET_MAX_OPEN_WORKFLOWS). */
  fleetMaxOpen: number | null = null,
): Promise<Array<{ job: JobRow; kind: MediaKind }>> {
  return withTransaction(pool, async (client) => {
    await lockWorkspaceSlots(client, workspaceId);
    const ws = await client.query('SELECT active_job_cap FROM workspaces WHERE id = $1', [
      workspaceId,
    ]);
    if (!ws.rows[0]) return [];
    const cap: number | null = ws.rows[0].active_job_cap;
    let free = ADMIT_BATCH;
    if (cap !== null) {
      const held = await client.query(
        `SELECT count(*)::int AS n FROM transcription_jobs
          WHERE workspace_id = $1 AND NOT awaiting_slot AND status IN ${ACTIVE_STATUS_LIST}`,
        [workspaceId],
      );
      free = Math.min(ADMIT_BATCH, cap - held.rows[0].n);
    }
    if (free <= 0) return [];
    if (fleetMaxOpen !== null) {
      // D14: after the workspace's lock, as every admission takes them, so no two wait on
      // each other. Every admitted active job is an open workflow, a person's page too.
      await lockFleetSlots(client);
      const open = await client.query(
        `SELECT count(*)::int AS n FROM transcription_jobs
          WHERE NOT awaiting_slot AND status IN ${ACTIVE_STATUS_LIST}`,
      );
      free = Math.min(free, fleetMaxOpen - open.rows[0].n);
      if (free <= 0) return [];
    }
    // In submission order. A row locked by a concurrent cancel is waited for, not skipped, so
    // a later job never overtakes an earlier one; one canceled meanwhile drops out.
    const { rows } = await client.query(
      `WITH next AS (
         SELECT id FROM transcription_jobs
          WHERE workspace_id = $1 AND awaiting_slot AND status = 'pending'
          ORDER BY created_at, id LIMIT $2 FOR UPDATE
       )
       UPDATE transcription_jobs j SET awaiting_slot = false, updated_at = now()
         FROM next, pages p
        WHERE j.id = next.id AND p.id = j.page_id AND j.awaiting_slot AND j.status = 'pending'
       RETURNING ${JOB_COLUMNS}, p.kind`,
      [workspaceId, free],
    );
    return rows
      .map((r) => ({ job: toJob(r), kind: r.kind as MediaKind }))
      .sort(
        (a, b) =>
          a.job.createdAt.getTime() - b.job.createdAt.getTime() || a.job.id.localeCompare(b.job.id),
      );
  });
}

/**
 * Workspaces with jobs waiting for a slot (the dispatcher's poll), the one waiting longest
 * first: under the installation's pace (D14) the slots a pass finds go to the oldest jobs.
 */
export async function workspacesWithWaitingJobs(db: Queryable): Promise<number[]> {
  const { rows } = await db.query(
    `SELECT workspace_id FROM transcription_jobs WHERE awaiting_slot AND status = 'pending'
      GROUP BY workspace_id ORDER BY min(created_at), workspace_id`,
  );
  return rows.map((r) => r.workspace_id as number);
}

/** Slots held and jobs waiting, per workspace (operator figures). */
export async function slotFigures(
  db: Queryable,
  workspaceId?: number,
): Promise<Map<number, { holding: number; waiting: number }>> {
  const { rows } = await db.query(
    `SELECT workspace_id,
            count(*) FILTER (WHERE NOT awaiting_slot)::int AS holding,
            count(*) FILTER (WHERE awaiting_slot AND status = 'pending')::int AS waiting
       FROM transcription_jobs
      WHERE status IN ${ACTIVE_STATUS_LIST} AND ($1::bigint IS NULL OR workspace_id = $1)
      GROUP BY workspace_id`,
    [workspaceId ?? null],
  );
  return new Map(
    rows.map((r) => [r.workspace_id as number, { holding: r.holding, waiting: r.waiting }]),
  );
}
