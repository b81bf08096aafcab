import type { AnnotationPage } from '../core/annotation';
import type { Queryable } from './pool';

/**
 * E3 mirror delivery: the rows `publishPage` upserts, claimed by the mirror relay. Every write
 * after the claim is fenced by the revision it claimed, so a result for an older revision never
 * marks a newer publication delivered.
 */
export interface ClaimedMirrorRow {
  pageId: number;
  workspaceId: number;
  revision: number;
  attempts: number;
  snapshot: AnnotationPage;
}

/** Claims due rows (SKIP LOCKED) and leases them by pushing `next_attempt_at` ahead. */
export async function claimDueMirrorRows(
  db: Queryable,
  options: { limit: number; leaseMs: number },
): Promise<ClaimedMirrorRow[]> {
  const { rows } = await db.query(
    `WITH due AS (
       SELECT page_id FROM mirror_outbox
        WHERE status IN ('pending', 'failing') AND next_attempt_at <= now()
        ORDER BY next_attempt_at, page_id
        LIMIT $1
        FOR UPDATE SKIP LOCKED
     )
     UPDATE mirror_outbox m
        SET next_attempt_at = now() + make_interval(secs => $2::double precision / 1000), updated_at = now()
       FROM due, pages p
      WHERE m.page_id = due.page_id AND p.id = m.page_id AND p.published_revision = m.revision
     RETURNING m.page_id, m.workspace_id, m.revision, m.attempts, p.published_snapshot`,
    [options.limit, options.leaseMs],
  );
  return rows.map((r) => ({
    pageId: r.page_id,
    workspaceId: r.workspace_id,
    revision: r.revision,
    attempts: r.attempts,
    snapshot: r.published_snapshot as AnnotationPage,
  }));
}

/** True when this revision was still the row's and is now delivered. */
export async function markMirrorDelivered(
  db: Queryable,
  pageId: number,
  revision: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE mirror_outbox SET status = 'delivered', attempts = attempts + 1, last_error = NULL, updated_at = now()
      WHERE page_id = $1 AND revision = $2 AND status <> 'delivered'`,
    [pageId, revision],
  );
  return rowCount === 1;
}

/** Records a failed attempt (error already redacted) and when to try again. */
export async function markMirrorFailed(
  db: Queryable,
  pageId: number,
  revision: number,
  error: string,
  nextAttemptAt: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE mirror_outbox SET status = 'failing', attempts = attempts + 1, last_error = $3, next_attempt_at = $4,
            updated_at = now()
      WHERE page_id = $1 AND revision = $2 AND status <> 'delivered'`,
    [pageId, revision, error, nextAttemptAt],
  );
  return rowCount === 1;
}

export async function getMirrorRow(db: Queryable, pageId: number) {
  const { rows } = await db.query(
    `SELECT page_id, workspace_id, revision, status, attempts, next_attempt_at, last_error FROM mirror_outbox
      WHERE page_id = $1`,
    [pageId],
  );
  const r = rows[0];
  return r
    ? {
        pageId: r.page_id as number,
        workspaceId: r.workspace_id as number,
        revision: r.revision as number,
        status: r.status as 'pending' | 'delivered' | 'failing',
        attempts: r.attempts as number,
        nextAttemptAt: r.next_attempt_at as Date,
        lastError: (r.last_error as string | null) ?? null,
      }
    : undefined;
}
