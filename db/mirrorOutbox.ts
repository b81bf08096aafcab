import type { AnnotationPage } from '../core/annotation';
import type { Queryable } from './pool';

/**
 * E3 mirror delivery: the rows `publishPage` upserts, claimed by the mirror relay. A claim is a
 * lease of its own (`lease_token`, `leased_until`), apart from the row's revision and schedule:
 * a newer revision's upsert moves the revision and makes the row due at once but leaves the
 * lease alone, so the newer revision is claimed only after the PUT in flight has answered or its
 * lease has run out. One PUT per page at a time, each of the newest revision when it was
 * claimed: the mirror receives revisions in order and ends on the newest. Every write after the
 * claim is fenced by the lease token, and marks a revision delivered only if it is still the
 * row's.
 */
export interface ClaimedMirrorRow {
  pageId: number;
  workspaceId: number;
  revision: number;
  attempts: number;
  leaseToken: string;
  snapshot: AnnotationPage;
}

/**
 * Claims due rows that no one holds (SKIP LOCKED) and leases them for `leaseMs`, which must
 * outlast the PUT's own timeout: a lease that ran out while its PUT was still open would let
 * a second PUT of the same page overlap it.
 */
export async function claimDueMirrorRows(
  db: Queryable,
  options: { limit: number; leaseMs: number },
): Promise<ClaimedMirrorRow[]> {
  const { rows } = await db.query(
    `WITH due AS (
       SELECT page_id FROM mirror_outbox
        WHERE status IN ('pending', 'failing') AND next_attempt_at <= now()
          AND (leased_until IS NULL OR leased_until <= now())
        ORDER BY next_attempt_at, page_id
        LIMIT $1
        FOR UPDATE SKIP LOCKED
     )
     UPDATE mirror_outbox m
        SET lease_token = gen_random_uuid(),
            leased_until = now() + make_interval(secs => $2::double precision / 1000), updated_at = now()
       FROM due, pages p
      WHERE m.page_id = due.page_id AND p.id = m.page_id AND p.published_revision = m.revision
     RETURNING m.page_id, m.workspace_id, m.revision, m.attempts, m.lease_token, p.published_snapshot`,
    [options.limit, options.leaseMs],
  );
  return rows.map((r) => ({
    pageId: r.page_id,
    workspaceId: r.workspace_id,
    revision: r.revision,
    attempts: r.attempts,
    leaseToken: r.lease_token,
    snapshot: r.published_snapshot as AnnotationPage,
  }));
}

/** Which claim a result belongs to. */
export interface MirrorClaim {
  pageId: number;
  revision: number;
  leaseToken: string;
}

/**
 * Ends a claim after the mirror accepted its PUT: the row is delivered when the claimed revision
 * is still its revision; a newer one that arrived meanwhile stays pending and is now free to be
 * claimed. True when the claimed revision was marked delivered; false when a newer revision
 * replaced it or the lease was lost (ran out and was claimed again).
 */
export async function markMirrorDelivered(db: Queryable, claim: MirrorClaim): Promise<boolean> {
  const { rows } = await db.query<{ current: boolean }>(
    `UPDATE mirror_outbox
        SET status = CASE WHEN revision = $2 THEN 'delivered' ELSE status END,
            attempts = CASE WHEN revision = $2 THEN attempts + 1 ELSE attempts END,
            last_error = CASE WHEN revision = $2 THEN NULL ELSE last_error END,
            lease_token = NULL, leased_until = NULL, updated_at = now()
      WHERE page_id = $1 AND lease_token = $3
      RETURNING revision = $2 AS current`,
    [claim.pageId, claim.revision, claim.leaseToken],
  );
  return rows[0]?.current === true;
}

/**
 * Ends a claim whose PUT failed (error already redacted): the claimed revision, if still the
 * row's, is retried at `nextAttemptAt`; a newer revision keeps its own schedule (due at once).
 * True when the failure was recorded against the row's revision.
 */
export async function markMirrorFailed(
  db: Queryable,
  claim: MirrorClaim,
  error: string,
  nextAttemptAt: Date,
): Promise<boolean> {
  const { rows } = await db.query<{ current: boolean }>(
    `UPDATE mirror_outbox
        SET status = CASE WHEN revision = $2 THEN 'failing' ELSE status END,
            attempts = CASE WHEN revision = $2 THEN attempts + 1 ELSE attempts END,
            last_error = CASE WHEN revision = $2 THEN $4 ELSE last_error END,
            next_attempt_at = CASE WHEN revision = $2 THEN $5 ELSE next_attempt_at END,
            lease_token = NULL, leased_until = NULL, updated_at = now()
      WHERE page_id = $1 AND lease_token = $3
      RETURNING revision = $2 AS current`,
    [claim.pageId, claim.revision, claim.leaseToken, error, nextAttemptAt],
  );
  return rows[0]?.current === true;
}

export async function getMirrorRow(db: Queryable, pageId: number) {
  const { rows } = await db.query(
    `SELECT page_id, workspace_id, revision, status, attempts, next_attempt_at, last_error, leased_until
       FROM mirror_outbox WHERE page_id = $1`,
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
        leasedUntil: (r.leased_until as Date | null) ?? null,
      }
    : undefined;
}
