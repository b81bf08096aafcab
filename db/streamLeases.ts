import { randomUUID } from 'node:crypto';
import { type Pool, type Queryable, withTransaction } from './pool';

/**
 * S1: open streams, counted in PostgreSQL so that the limits per principal and per workspace
 * hold across every web replica. A stream holds one row while it is open; the replica serving
 * it renews the row's lease, and deletes it when the stream ends. A replica that dies stops
 * renewing, so its rows stop counting when their lease runs out: no slot is lost for good.
 */
export interface StreamLimits {
  /** Open streams of one principal (an API key, or a console session's key). */
  perPrincipal: number;
  /** Open streams of one workspace, all principals together. */
  perWorkspace: number;
  /** How long a slot outlives its last renewal. */
  leaseMs: number;
}

export type StreamLeaseResult =
  | { acquired: true; id: string }
  | { acquired: false; limit: 'principal' | 'workspace'; max: number };

/**
 * Takes one slot, or says which limit is full. Serialised per workspace by an advisory lock
 * (not a lock on the workspace row, which every insert referencing the workspace would wait
 * on), so two replicas cannot both take the last slot. Expired rows of the workspace are
 * removed on the way.
 */
export async function acquireStreamLease(
  pool: Pool,
  args: { workspaceId: number; principal: string; holder: string; limits: StreamLimits },
): Promise<StreamLeaseResult> {
  return withTransaction(pool, async (client) => {
    await client.query(
      `SELECT pg_advisory_xact_lock(hashtextextended('quire.stream_leases.' || $1, 0))`,
      [String(args.workspaceId)],
    );
    await client.query(
      'DELETE FROM stream_leases WHERE workspace_id = $1 AND expires_at <= now()',
      [args.workspaceId],
    );
    const { rows } = await client.query<{ mine: number; total: number }>(
      `SELECT count(*) FILTER (WHERE principal = $2)::int AS mine, count(*)::int AS total
         FROM stream_leases WHERE workspace_id = $1`,
      [args.workspaceId, args.principal],
    );
    const { mine, total } = rows[0]!;
    if (mine >= args.limits.perPrincipal) {
      return {
        acquired: false as const,
        limit: 'principal' as const,
        max: args.limits.perPrincipal,
      };
    }
    if (total >= args.limits.perWorkspace) {
      return {
        acquired: false as const,
        limit: 'workspace' as const,
        max: args.limits.perWorkspace,
      };
    }
    const id = randomUUID();
    await client.query(
      `INSERT INTO stream_leases (id, workspace_id, principal, holder, expires_at)
       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::double precision / 1000))`,
      [id, args.workspaceId, args.principal, args.holder, args.limits.leaseMs],
    );
    return { acquired: true as const, id };
  });
}

/**
 * Extends the leases of streams still open; returns the ids it extended. A lease that already
 * ran out is not brought back (its slot may have been counted free and taken): its stream must
 * end.
 */
export async function renewStreamLeases(
  db: Queryable,
  ids: readonly string[],
  leaseMs: number,
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(
    `UPDATE stream_leases SET expires_at = now() + make_interval(secs => $2::double precision / 1000)
      WHERE id = ANY($1::uuid[]) AND expires_at > now()
      RETURNING id`,
    [ids, leaseMs],
  );
  return new Set(rows.map((r) => r.id));
}

export async function releaseStreamLease(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM stream_leases WHERE id = $1', [id]);
}

/** Streams open now, per workspace and in all (operations figures). */
export async function countOpenStreams(db: Queryable, workspaceId?: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM stream_leases
      WHERE expires_at > now() AND ($1::bigint IS NULL OR workspace_id = $1)`,
    [workspaceId ?? null],
  );
  return rows[0]?.n ?? 0;
}
