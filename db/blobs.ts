import { cappedBackoffMs } from '../core/backoff';
import { DomainError } from '../core/errors';
import type { Pool, PoolClient, Queryable } from './pool';
import { withTransaction } from './pool';
import { readCountSetting, SETTINGS } from './settings';

/**
 * Blobs, staged cleanups and quota (SPEC U2, U3). Every byte Quire stores is held by a row
 * here until it is really gone:
 *
 * - an ingest stages a cleanup row (key, workspace, size) BEFORE its first write, under the
 *   quota guards, so reserved bytes count against the workspace and global quotas at once;
 * - the ingest's commit inserts the blob and the page and retires the row in one transaction;
 * - anything else (a crash, a bad upload, a deletion) leaves the row pending, and the
 *   cleanup deletes the bytes through a fence: quota guards, reference check,
 *   `delete_fenced_at`, then the object, then `deleted`. Pending rows keep counting against
 *   quota until then.
 */

/** Advisory lock namespace of the quota guards: (class, workspaceId) and (class, 0) = global. */
const QUOTA_GUARD_CLASS = 7_401_120;
const GLOBAL_GUARD = 0;
/** `('staged', 'due', 'failing')`: cleanup rows not yet done; their bytes still count. */
export const PENDING_CLEANUP_LIST = `('staged', 'due', 'failing')`;
/** How long a cleanup runner owns a claimed row before another runner may take it over. */
export const CLEANUP_LEASE_MS = 15 * 60 * 1000;
/** U3: deletion retries without limit, the pause between tries capped at one hour. */
export const CLEANUP_BACKOFF_CAP_MS = 60 * 60 * 1000;
const CLEANUP_BACKOFF_BASE_MS = 30 * 1000;

export class QuotaExceededError extends DomainError {
  override name = 'QuotaExceededError';
  constructor(
    readonly scope: 'workspace' | 'global',
    readonly limitBytes: number,
    readonly usedBytes: number,
    readonly requestedBytes: number,
  ) {
    super(
      'quota_exceeded',
      scope === 'workspace'
        ? `the workspace storage quota (${limitBytes} bytes) would be exceeded`
        : 'the storage quota of this installation would be exceeded',
    );
  }
}

/** A reference creator met a blob that a cleanup has fenced for deletion (U3). */
export class BlobFencedError extends Error {
  override name = 'BlobFencedError';
  readonly code = 'blob_fenced';
  constructor(readonly key: string) {
    super('the blob is being deleted and can no longer be referenced');
  }
}

export class BlobNotFoundError extends Error {
  override name = 'BlobNotFoundError';
  readonly code = 'blob_not_found';
  constructor(readonly key: string) {
    super('no such blob in this workspace');
  }
}

/** The staged reservation was taken over by the cleanup (it outlived `reserve_until`). */
export class ReservationLostError extends DomainError {
  override name = 'ReservationLostError';
  constructor(readonly cleanupId: number) {
    super('reservation_expired', 'the upload took longer than its reservation; nothing was stored');
  }
}

/** Takes the workspace guard, then the global one: always in that order, so never a deadlock. */
export async function takeQuotaGuards(client: PoolClient, workspaceId: number): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1, $2)', [QUOTA_GUARD_CLASS, workspaceId]);
  await client.query('SELECT pg_advisory_xact_lock($1, $2)', [QUOTA_GUARD_CLASS, GLOBAL_GUARD]);
}

/**
 * Bytes held: every pending cleanup row (staged, due, failing) plus every live blob that no
 * pending row already covers. A blob being deleted counts until its row is `deleted`.
 */
function usageSql(where: string): string {
  return `
    WITH pending AS (
      SELECT workspace_id, blob_key, size_bytes FROM blob_cleanups WHERE status IN ${PENDING_CLEANUP_LIST}
    ), held AS (
      SELECT workspace_id, size_bytes FROM pending
      UNION ALL
      SELECT b.workspace_id, b.size_bytes FROM blobs b
       WHERE b.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM pending p WHERE p.blob_key = b.key)
    )
    SELECT workspace_id, coalesce(sum(size_bytes), 0)::bigint AS bytes FROM held ${where} GROUP BY workspace_id`;
}

export async function workspaceUsageBytes(db: Queryable, workspaceId: number): Promise<number> {
  const { rows } = await db.query<{ bytes: number }>(usageSql('WHERE workspace_id = $1'), [
    workspaceId,
  ]);
  return rows[0]?.bytes ?? 0;
}

export async function totalUsageBytes(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ bytes: number }>(usageSql(''));
  return rows.reduce((sum, r) => sum + r.bytes, 0);
}

/** The global quota: the `settings` row when present (operators change it live), else `fallback`. */
export async function globalQuotaBytes(
  db: Queryable,
  fallback?: number | null,
): Promise<number | null> {
  return (await readCountSetting(db, SETTINGS.globalQuotaBytes)) ?? fallback ?? null;
}

export interface QuotaLimit {
  scope: 'workspace' | 'global';
  limitBytes: number;
  usedBytes: number;
}

/** The tightest quota with the bytes still free under it, or undefined when unlimited. */
async function tightestQuota(
  client: PoolClient,
  workspaceId: number,
  globalFallback?: number | null,
): Promise<QuotaLimit | undefined> {
  const ws = await client.query<{ quota_bytes: number | null }>(
    'SELECT quota_bytes FROM workspaces WHERE id = $1',
    [workspaceId],
  );
  if (ws.rowCount === 0) throw new Error(`workspace ${workspaceId} does not exist`);
  const limits: QuotaLimit[] = [];
  const workspaceLimit = ws.rows[0]?.quota_bytes ?? null;
  if (workspaceLimit !== null) {
    limits.push({
      scope: 'workspace',
      limitBytes: workspaceLimit,
      usedBytes: await workspaceUsageBytes(client, workspaceId),
    });
  }
  const globalLimit = await globalQuotaBytes(client, globalFallback);
  if (globalLimit !== null) {
    limits.push({
      scope: 'global',
      limitBytes: globalLimit,
      usedBytes: await totalUsageBytes(client),
    });
  }
  return limits.sort((a, b) => a.limitBytes - a.usedBytes - (b.limitBytes - b.usedBytes))[0];
}

/** Checks that `extraBytes` more fit both quotas. Call with the quota guards held. */
async function assertQuota(
  client: PoolClient,
  workspaceId: number,
  extraBytes: number,
  globalFallback?: number | null,
): Promise<void> {
  const tightest = await tightestQuota(client, workspaceId, globalFallback);
  if (tightest && tightest.usedBytes + extraBytes > tightest.limitBytes) {
    throw new QuotaExceededError(
      tightest.scope,
      tightest.limitBytes,
      tightest.usedBytes,
      extraBytes,
    );
  }
}

export interface StageInput {
  workspaceId: number;
  /** The object key the row covers; during an ingest first the temporary key. */
  objectKey: string;
  /** The `.quire-upload-*` temporary the bytes are written to first. */
  temporaryKey: string | null;
  /** Bytes reserved: the exact size when known, else an upper bound settled later. */
  sizeBytes: number;
  reserveUntil: Date;
  globalQuotaBytes?: number | null;
  /**
   * When `sizeBytes` is only an upper bound: reserve what the quotas leave (at least one byte)
   * instead of refusing; the writer must then stop at `reservedBytes`.
   */
  fitToQuota?: boolean;
}

export interface Staged {
  cleanupId: number;
  reservedBytes: number;
  /** The quota that cut the reservation short, when one did. */
  limitedBy?: QuotaLimit;
}

/**
 * U2: stages a cleanup row that reserves `sizeBytes` against both quotas, in its own committed
 * transaction, BEFORE any byte is written. Throws `QuotaExceededError` and stages nothing
 * when the bytes do not fit.
 */
export async function stageBlobCleanup(pool: Pool, input: StageInput): Promise<Staged> {
  return withTransaction(pool, async (client) => {
    await takeQuotaGuards(client, input.workspaceId);
    const tightest = await tightestQuota(client, input.workspaceId, input.globalQuotaBytes);
    let reservedBytes = input.sizeBytes;
    let limitedBy: QuotaLimit | undefined;
    if (tightest && tightest.usedBytes + input.sizeBytes > tightest.limitBytes) {
      const free = tightest.limitBytes - tightest.usedBytes;
      if (!input.fitToQuota || free < 1) {
        throw new QuotaExceededError(
          tightest.scope,
          tightest.limitBytes,
          tightest.usedBytes,
          input.sizeBytes,
        );
      }
      reservedBytes = free;
      limitedBy = tightest;
    }
    const { rows } = await client.query<{ id: number }>(
      `INSERT INTO blob_cleanups (blob_key, temp_key, workspace_id, size_bytes, status, reserve_until, reason)
       VALUES ($1, $2, $3, $4, 'staged', $5, 'ingest') RETURNING id`,
      [input.objectKey, input.temporaryKey, input.workspaceId, reservedBytes, input.reserveUntil],
    );
    return { cleanupId: rows[0]!.id, reservedBytes, ...(limitedBy ? { limitedBy } : {}) };
  });
}

/**
 * Once the bytes are written: the row names the canonical key and the exact size, BEFORE the
 * temporary is renamed, so a crash after the rename still leaves a row naming the object.
 */
export async function settleStagedCleanup(
  pool: Pool,
  cleanupId: number,
  settled: {
    workspaceId: number;
    objectKey: string;
    sizeBytes: number;
    globalQuotaBytes?: number | null;
  },
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await takeQuotaGuards(client, settled.workspaceId);
    const current = await client.query<{ size_bytes: number }>(
      `SELECT size_bytes FROM blob_cleanups WHERE id = $1 AND status = 'staged' FOR UPDATE`,
      [cleanupId],
    );
    const reserved = current.rows[0]?.size_bytes;
    if (reserved === undefined) throw new ReservationLostError(cleanupId);
    if (settled.sizeBytes > reserved) {
      await assertQuota(
        client,
        settled.workspaceId,
        settled.sizeBytes - reserved,
        settled.globalQuotaBytes,
      );
    }
    await client.query(
      `UPDATE blob_cleanups SET blob_key = $2, size_bytes = $3, updated_at = now() WHERE id = $1`,
      [cleanupId, settled.objectKey, settled.sizeBytes],
    );
  });
}

/**
 * In the commit transaction, first: locks the staged rows so no cleanup can take them over
 * while the pages are written. A row already taken over fails the whole commit.
 */
export async function lockStagedCleanups(
  client: PoolClient,
  cleanupIds: readonly number[],
): Promise<void> {
  if (cleanupIds.length === 0) return;
  const { rows } = await client.query<{ id: number; status: string }>(
    'SELECT id, status FROM blob_cleanups WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE',
    [cleanupIds],
  );
  for (const id of cleanupIds) {
    const row = rows.find((r) => r.id === id);
    if (row?.status !== 'staged') throw new ReservationLostError(id);
  }
}

export interface NewBlob {
  key: string;
  workspaceId: number;
  sha256hex: string;
  sizeBytes: number;
  mediaType: string;
}

export async function insertBlob(client: Queryable, blob: NewBlob): Promise<void> {
  await client.query(
    `INSERT INTO blobs (key, workspace_id, sha256, size_bytes, media_type) VALUES ($1, $2, decode($3, 'hex'), $4, $5)`,
    [blob.key, blob.workspaceId, blob.sha256hex, blob.sizeBytes, blob.mediaType],
  );
}

/**
 * U3, for every reference creator: call in the SAME transaction as the insert or update that
 * makes a page point at `key`. The share lock makes a concurrent fence wait for this
 * transaction (and then see the reference); a fence that came first is seen here and refused.
 */
export async function lockBlobForReference(
  client: PoolClient,
  workspaceId: number,
  key: string,
): Promise<void> {
  const { rows } = await client.query<{ delete_fenced_at: Date | null; deleted_at: Date | null }>(
    'SELECT delete_fenced_at, deleted_at FROM blobs WHERE key = $1 AND workspace_id = $2 FOR SHARE',
    [key, workspaceId],
  );
  const row = rows[0];
  if (!row) throw new BlobNotFoundError(key);
  if (row.delete_fenced_at !== null || row.deleted_at !== null) throw new BlobFencedError(key);
}

/** U2: the page now references the blob, so the reservation becomes the blob's own bytes. */
export async function retireBlobCleanup(client: PoolClient, cleanupId: number): Promise<void> {
  const result = await client.query(
    `UPDATE blob_cleanups SET status = 'retired', updated_at = now() WHERE id = $1 AND status = 'staged'`,
    [cleanupId],
  );
  if (result.rowCount !== 1) throw new ReservationLostError(cleanupId);
}

/**
 * Hands a blob to the cleanup (item deletion, audio released once the engine holds it, the
 * orphan sweep). Call in the transaction that removes the last reference. Idempotent: a
 * pending row for the key is kept as it is.
 */
export async function scheduleBlobDeletion(
  client: Queryable,
  workspaceId: number,
  key: string,
  options: { reason?: 'delete' | 'orphan'; now?: Date } = {},
): Promise<void> {
  const now = options.now ?? new Date();
  await client.query(
    `INSERT INTO blob_cleanups (blob_key, workspace_id, size_bytes, status, reserve_until, next_attempt_at, reason)
     SELECT key, workspace_id, size_bytes, 'due', $3, $3, $4 FROM blobs
      WHERE key = $1 AND workspace_id = $2 AND deleted_at IS NULL
     ON CONFLICT (blob_key) WHERE status IN ${PENDING_CLEANUP_LIST} DO NOTHING`,
    [key, workspaceId, now, options.reason ?? 'delete'],
  );
}

// ---------------------------------------------------------------- the fenced deletion

export interface CleanupTask {
  id: number;
  workspaceId: number;
  blobKey: string;
  temporaryKey: string | null;
  attempts: number;
}

const DUE = `((status = 'staged' AND reserve_until <= $1)
          OR (status IN ('due', 'failing') AND coalesce(next_attempt_at, '-infinity') <= $1))`;

/** Ids of cleanup rows due at `now`: staged rows past their reservation, due and failing rows. */
export async function dueCleanupIds(db: Queryable, now: Date, limit: number): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>(
    `SELECT id FROM blob_cleanups WHERE status IN ${PENDING_CLEANUP_LIST} AND ${DUE} ORDER BY id LIMIT $2`,
    [now, limit],
  );
  return rows.map((r) => r.id);
}

export type FenceOutcome =
  | { kind: 'fenced'; task: CleanupTask }
  | { kind: 'referenced' }
  | { kind: 'not_due' };

/**
 * U3 step one, in one transaction: quota guards, the row (skipped when another runner holds
 * it or it is no longer due), the reference check, `delete_fenced_at`. A referenced blob is
 * never deleted: its row is retired instead. The claim holds the row for `CLEANUP_LEASE_MS`
 * so concurrent runners leave it alone; a runner that dies loses it after the lease.
 */
export async function fenceCleanup(
  pool: Pool,
  cleanupId: number,
  now: Date,
): Promise<FenceOutcome> {
  const head = await pool.query<{ workspace_id: number }>(
    'SELECT workspace_id FROM blob_cleanups WHERE id = $1',
    [cleanupId],
  );
  const workspaceId = head.rows[0]?.workspace_id;
  if (workspaceId === undefined) return { kind: 'not_due' };
  return withTransaction(pool, async (client) => {
    await takeQuotaGuards(client, workspaceId);
    const { rows } = await client.query<{
      id: number;
      blob_key: string;
      temp_key: string | null;
      attempts: number;
    }>(
      `SELECT id, blob_key, temp_key, attempts FROM blob_cleanups
        WHERE id = $2 AND status IN ${PENDING_CLEANUP_LIST} AND ${DUE} FOR UPDATE SKIP LOCKED`,
      [now, cleanupId],
    );
    const row = rows[0];
    if (!row) return { kind: 'not_due' };
    const blob = await client.query('SELECT key FROM blobs WHERE key = $1 FOR UPDATE', [
      row.blob_key,
    ]);
    if (blob.rowCount === 1) {
      // The row lock above waited for any reference creator holding a share lock, so a
      // reference committed before now is visible to this check.
      // A page references a blob as its master or as its pyramidal derivative (I4).
      const referenced = await client.query(
        'SELECT 1 FROM pages WHERE blob_key = $1 OR derivative_key = $1 LIMIT 1',
        [row.blob_key],
      );
      if (referenced.rowCount !== 0) {
        await client.query(
          `UPDATE blob_cleanups SET status = 'retired', updated_at = now() WHERE id = $1`,
          [row.id],
        );
        return { kind: 'referenced' };
      }
      await client.query(
        'UPDATE blobs SET delete_fenced_at = coalesce(delete_fenced_at, $2) WHERE key = $1',
        [row.blob_key, now],
      );
    }
    await client.query(
      `UPDATE blob_cleanups SET status = 'due', next_attempt_at = $2, updated_at = now() WHERE id = $1`,
      [row.id, new Date(now.getTime() + CLEANUP_LEASE_MS)],
    );
    return {
      kind: 'fenced',
      task: {
        id: row.id,
        workspaceId,
        blobKey: row.blob_key,
        temporaryKey: row.temp_key,
        attempts: row.attempts,
      },
    };
  });
}

/**
 * U3 last step, after the object is gone: the row is `deleted` (or removed outright with
 * `forget`, for an upload that was refused and must leave no row) and the blob marked deleted.
 */
export async function completeCleanup(
  pool: Pool,
  task: CleanupTask,
  now: Date,
  options: { forget?: boolean } = {},
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await takeQuotaGuards(client, task.workspaceId);
    const result = options.forget
      ? await client.query(`DELETE FROM blob_cleanups WHERE id = $1 AND status = 'due'`, [task.id])
      : await client.query(
          `UPDATE blob_cleanups SET status = 'deleted', last_error = NULL, updated_at = now()
            WHERE id = $1 AND status = 'due'`,
          [task.id],
        );
    if (result.rowCount === 0) return; // another runner finished it after our lease ran out
    await client.query(
      `UPDATE blobs SET deleted_at = $2 WHERE key = $1 AND deleted_at IS NULL AND delete_fenced_at IS NOT NULL`,
      [task.blobKey, now],
    );
  });
}

/** Bounded exponential backoff with jitter, capped at one hour; never gives up (U3). */
export function cleanupBackoffMs(attempts: number, random: () => number = Math.random): number {
  return cappedBackoffMs(attempts - 1, CLEANUP_BACKOFF_BASE_MS, CLEANUP_BACKOFF_CAP_MS, random);
}

/** The object could not be deleted: the row stays pending (still counted) and retries later. */
export async function failCleanup(
  pool: Pool,
  task: CleanupTask,
  errorCode: string,
  now: Date,
): Promise<number> {
  const attempts = task.attempts + 1;
  const next = new Date(now.getTime() + cleanupBackoffMs(attempts));
  await pool.query(
    `UPDATE blob_cleanups SET status = 'failing', attempts = $2, next_attempt_at = $3, last_error = $4,
            updated_at = now()
      WHERE id = $1 AND status = 'due'`,
    [task.id, attempts, next, errorCode.slice(0, 200)],
  );
  return next.getTime() - now.getTime();
}

/** An ingest gives its staged reservation back to the cleanup at once (a refused upload). */
export async function releaseStagedCleanup(pool: Pool, cleanupId: number): Promise<void> {
  await pool.query(
    `UPDATE blob_cleanups SET reserve_until = '-infinity', updated_at = now() WHERE id = $1 AND status = 'staged'`,
    [cleanupId],
  );
}

// ---------------------------------------------------------------- orphans and figures

/** Live blobs no page references and no pending row covers, created before `olderThan`. */
export async function unreferencedBlobs(
  db: Queryable,
  olderThan: Date,
  limit: number,
): Promise<Array<{ key: string; workspaceId: number }>> {
  const { rows } = await db.query<{ key: string; workspace_id: number }>(
    `SELECT b.key, b.workspace_id FROM blobs b
      WHERE b.deleted_at IS NULL AND b.created_at < $1
        AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.blob_key = b.key)
        AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.derivative_key = b.key)
        AND NOT EXISTS (SELECT 1 FROM blob_cleanups c WHERE c.blob_key = b.key AND c.status IN ${PENDING_CLEANUP_LIST})
      ORDER BY b.created_at LIMIT $2`,
    [olderThan, limit],
  );
  return rows.map((r) => ({ key: r.key, workspaceId: r.workspace_id }));
}

/** Of `keys`, those that Quire still knows: a live blob row or a pending cleanup row. */
export async function knownObjectKeys(
  db: Queryable,
  keys: readonly string[],
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const { rows } = await db.query<{ key: string }>(
    `SELECT key FROM blobs WHERE key = ANY($1::text[]) AND deleted_at IS NULL
     UNION
     SELECT blob_key FROM blob_cleanups WHERE blob_key = ANY($1::text[]) AND status IN ${PENDING_CLEANUP_LIST}
     UNION
     SELECT temp_key FROM blob_cleanups WHERE temp_key = ANY($1::text[]) AND status IN ${PENDING_CLEANUP_LIST}`,
    [keys],
  );
  return new Set(rows.map((r) => r.key));
}

export interface BlobUsage {
  totalBytes: number;
  workspaces: Array<{ workspaceId: number; bytes: number }>;
  pendingCleanups: number;
  /** Rows whose deletion failed at least once and is being retried. */
  failedCleanups: number;
  /** Age of the oldest pending row, or null when none is pending. */
  oldestPendingCleanupAgeMs: number | null;
}

/** The alert figures of issue 6 (operations endpoint and console). */
export async function blobUsage(db: Queryable, now: Date = new Date()): Promise<BlobUsage> {
  const perWorkspace = await db.query<{ workspace_id: number; bytes: number }>(
    `${usageSql('')} ORDER BY workspace_id`,
  );
  const cleanups = await db.query<{ pending: number; failing: number; oldest: Date | null }>(
    `SELECT count(*)::bigint AS pending,
            count(*) FILTER (WHERE status = 'failing')::bigint AS failing,
            min(created_at) AS oldest
       FROM blob_cleanups WHERE status IN ${PENDING_CLEANUP_LIST}`,
  );
  const c = cleanups.rows[0];
  const workspaces = perWorkspace.rows.map((r) => ({
    workspaceId: r.workspace_id,
    bytes: r.bytes,
  }));
  return {
    totalBytes: workspaces.reduce((sum, w) => sum + w.bytes, 0),
    workspaces,
    pendingCleanups: c?.pending ?? 0,
    failedCleanups: c?.failing ?? 0,
    oldestPendingCleanupAgeMs: c?.oldest ? Math.max(0, now.getTime() - c.oldest.getTime()) : null,
  };
}

/** D8: whether the installation holds the object `key` (written, referenced, not deleted). */
export async function blobIsLive(db: Queryable, key: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM blobs WHERE key = $1 AND deleted_at IS NULL', [
    key,
  ]);
  return rows.length > 0;
}
