import type { Queryable } from './pool';

/**
 * M4: the audit log of acts on the installation and on jobs: every operator action, and every
 * cancel, resume and re-run by anyone, and every change to the archive (F1/F2: collections,
 * item descriptions, page order and moves). Append-only (a trigger refuses UPDATE, DELETE and
 * TRUNCATE). Not to be confused with db/audit.ts, the invariant auditor of the job tables.
 */

/** Who acted: an operator key, a workspace key (API or console session), or the admin CLI. */
export type AuditActor =
  | { kind: 'operator'; keyId: number }
  | { kind: 'workspace'; keyId: number }
  | { kind: 'cli' };

export const CLI_ACTOR: AuditActor = { kind: 'cli' };

export type AuditAction =
  | 'installation.daily_budget'
  | 'installation.quota'
  | 'workspace.daily_budget'
  | 'workspace.quota'
  | 'workspace.job_cap'
  | 'workspace.providers'
  /** V6: keep recordings, or delete Quire's copy once the engine holds it. */
  | 'workspace.recording_retention'
  | 'provider.resume'
  | 'operator_key.create'
  | 'operator_key.revoke'
  | 'job.cancel'
  | 'job.rerun'
  /** V3: a job started to read every line, those a person edited or verified too. */
  | 'job.overwrite_human_lines'
  | 'batch.cancel'
  | 'collection.create'
  | 'collection.update'
  | 'collection.delete'
  | 'item.update'
  | 'item.pages';

export interface AuditEntryInput {
  action: AuditAction;
  /** What was acted on, as a path: `workspaces/3`, `providers/tesseract`, `transcription-jobs/<id>`. */
  target: string;
  /** The workspace the target belongs to; null for installation-wide targets. */
  workspaceId: number | null;
  before: unknown;
  after: unknown;
}

export interface AuditEntry {
  id: number;
  at: Date;
  actor: { kind: AuditActor['kind']; keyId: number | null };
  action: AuditAction;
  target: string;
  workspaceId: number | null;
  before: unknown;
  after: unknown;
}

/** Appends one row; call it inside the transaction of the act it records where there is one. */
export async function recordAudit(
  db: Queryable,
  actor: AuditActor,
  entry: AuditEntryInput,
): Promise<void> {
  await db.query(
    `INSERT INTO audit_log (actor_kind, actor_key_id, action, target, workspace_id, before, after)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb)`,
    [
      actor.kind,
      actor.kind === 'cli' ? null : actor.keyId,
      entry.action,
      entry.target,
      entry.workspaceId,
      JSON.stringify(entry.before ?? null),
      JSON.stringify(entry.after ?? null),
    ],
  );
}

/**
 * Newest first, keyset-paged by id. `workspaceId` scopes to one workspace's rows (what a
 * workspace key sees); `null` lists every row (operators).
 */
export async function listAudit(
  db: Queryable,
  filter: { workspaceId: number | null; beforeId?: number; limit?: number },
): Promise<{ entries: AuditEntry[]; nextBeforeId: number | null }> {
  const limit = Math.min(Math.max(filter.limit ?? 50, 1), 200);
  const { rows } = await db.query(
    `SELECT id, at, actor_kind, actor_key_id, action, target, workspace_id, before, after
       FROM audit_log
      WHERE ($1::bigint IS NULL OR workspace_id = $1) AND ($2::bigint IS NULL OR id < $2)
      ORDER BY id DESC LIMIT $3`,
    [filter.workspaceId, filter.beforeId ?? null, limit + 1],
  );
  const entries = rows.slice(0, limit).map((r) => ({
    id: r.id,
    at: r.at,
    actor: { kind: r.actor_kind, keyId: r.actor_key_id },
    action: r.action,
    target: r.target,
    workspaceId: r.workspace_id,
    before: r.before,
    after: r.after,
  }));
  return {
    entries,
    nextBeforeId: rows.length > limit ? (entries[entries.length - 1]?.id ?? null) : null,
  };
}
