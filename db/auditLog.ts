import { type Actor, type ActorView, actorView } from '../core/actor';
import { actorNames } from './actors';
import type { Queryable } from './pool';

/**
 * M4: the audit log of acts on the installation and on jobs: every operator action, and every
 * cancel, resume and re-run by anyone, and every change to the archive (F1/F2: collections,
 * item descriptions, page order and moves). Append-only (a trigger refuses UPDATE, DELETE and
 * TRUNCATE). Not to be confused with db/audit.ts, the invariant auditor of the job tables.
 */

/** Who may be named by an audit row: a person, a key, or the admin CLI. */
export type AuditActor = Extract<Actor, { kind: 'account' | 'apiKey' | 'operatorKey' | 'cli' }>;

/**
 * The audit log's `actor_kind` for each actor, as recorded since M4 (`workspace`: a workspace's
 * API key; `operator`: an operator key) and shown as the entry's `kind` by the API.
 */
const RECORDED_KIND = {
  account: 'account',
  apiKey: 'workspace',
  operatorKey: 'operator',
  cli: 'cli',
} as const satisfies Record<AuditActor['kind'], string>;
type RecordedKind = (typeof RECORDED_KIND)[AuditActor['kind']];

function actorOfRow(r: {
  actor_kind: RecordedKind;
  actor_key_id: number | null;
  actor_account_id: number | null;
}): AuditActor {
  switch (r.actor_kind) {
    case 'account':
      return { kind: 'account', id: r.actor_account_id! };
    case 'workspace':
      return { kind: 'apiKey', id: r.actor_key_id! };
    case 'operator':
      return { kind: 'operatorKey', id: r.actor_key_id! };
    case 'cli':
      return { kind: 'cli' };
  }
}

/** Every action the audit log records; the audit page offers them as a filter (R10). */
export const AUDIT_ACTIONS = [
  'installation.daily_budget',
  'installation.quota',
  'workspace.daily_budget',
  'workspace.quota',
  'workspace.job_cap',
  'workspace.providers',
  /** V6: keep recordings, or delete Quire's copy once the engine holds it. */
  'workspace.recording_retention',
  'provider.resume',
  'operator_key.create',
  'operator_key.revoke',
  /** R10: an upload (a batch of files, its pages and the jobs started for them). */
  'batch.create',
  /** F8: an item imported from a IIIF manifest URL (its pages and the jobs started for them). */
  'item.import_iiif',
  /** R10: a job started on its own (POST transcription-jobs), not by an upload or a re-run. */
  'job.start',
  'job.cancel',
  'job.rerun',
  /** V3: a job started to read every line, those a person edited or verified too. */
  'job.overwrite_human_lines',
  'batch.cancel',
  'collection.create',
  'collection.update',
  'collection.delete',
  'item.update',
  'item.pages',
  /** R10: an item deleted with its pages (their ids in `before`). */
  'item.delete',
  /** R10: a person's revision of a page, with the lines it edited and verified (counts). */
  'page.edit',
  'page.publish',
  'webhook.create',
  'webhook.delete',
  'member.invite',
  /** R1: an owner revoked a pending invitation; its link opens nothing. */
  'member.revoke_invitation',
  'member.join',
  'member.change_role',
  'member.remove',
  'api_key.create',
  'api_key.revoke',
  'account.create',
  'account.disable',
  'account.enable',
  /** X2: single sign-on linked an account the person proved they hold. */
  'account.oidc_link',
  /** R2, X2: the provider's mapping made an account an operator, or stopped doing so. */
  'account.operator_grant',
  'account.operator_revoke',
  /** R9: a password set through a reset link sent to the account's email. */
  'account.password_reset',
  /** R9: a signed-in person changed their own password (their other sessions ended). */
  'account.password_change',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export function isAuditAction(value: unknown): value is AuditAction {
  return typeof value === 'string' && (AUDIT_ACTIONS as readonly string[]).includes(value);
}

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
  /**
   * `kind` and `keyId` as recorded since M4; R5 adds `type`, `id` and `name`: the account or
   * key that acted (`cli` for the admin CLI, which has neither), by name (R7).
   */
  actor: ActorView & { kind: RecordedKind; keyId: number | null };
  action: AuditAction;
  target: string;
  workspaceId: number | null;
  before: unknown;
  after: unknown;
}

/**
 * Appends one row; call it inside the transaction of the act it records where there is one.
 * `once`: not when the log holds this action on this target already (an upload retried with
 * its idempotency key answers the batch it made, and changed nothing the second time).
 */
export async function recordAudit(
  db: Queryable,
  actor: AuditActor,
  entry: AuditEntryInput,
  options: { once?: boolean } = {},
): Promise<void> {
  await db.query(
    `INSERT INTO audit_log (actor_kind, actor_key_id, actor_account_id, actor_name, action,
                            target, workspace_id, before, after)
     SELECT $1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb
      WHERE NOT $10::boolean
         OR NOT EXISTS (SELECT 1 FROM audit_log WHERE action = $5 AND target = $6)`,
    [
      RECORDED_KIND[actor.kind],
      actor.kind === 'apiKey' || actor.kind === 'operatorKey' ? actor.id : null,
      actor.kind === 'account' ? actor.id : null,
      actor.kind === 'cli' ? null : (actor.name ?? null),
      entry.action,
      entry.target,
      entry.workspaceId,
      JSON.stringify(entry.before ?? null),
      JSON.stringify(entry.after ?? null),
      options.once ?? false,
    ],
  );
}

/**
 * R10: what the audit page narrows to: one person (an account or a key), one action, and a
 * span of days (`from` inclusive, `to` exclusive).
 */
export interface AuditFilter {
  actor?: Extract<AuditActor, { kind: 'account' | 'apiKey' }>;
  action?: AuditAction;
  from?: Date;
  to?: Date;
}

/**
 * Newest first, keyset-paged by id. `workspaceId` scopes to one workspace's rows (what a
 * workspace key sees); `null` lists every row (operators).
 */
export async function listAudit(
  db: Queryable,
  filter: { workspaceId: number | null; beforeId?: number; limit?: number } & AuditFilter,
): Promise<{ entries: AuditEntry[]; nextBeforeId: number | null }> {
  const limit = Math.min(Math.max(filter.limit ?? 50, 1), 200);
  const actor = filter.actor;
  const { rows } = await db.query(
    `SELECT a.id, a.at, a.actor_kind, a.actor_key_id, a.actor_account_id, a.action, a.target,
            a.workspace_id, a.before, a.after, a.actor_name
       FROM audit_log a
      WHERE ($1::bigint IS NULL OR a.workspace_id = $1) AND ($2::bigint IS NULL OR a.id < $2)
        AND ($4::bigint IS NULL OR a.actor_kind = 'account' AND a.actor_account_id = $4)
        AND ($5::bigint IS NULL OR a.actor_kind = 'workspace' AND a.actor_key_id = $5)
        AND ($6::text IS NULL OR a.action = $6)
        AND ($7::timestamptz IS NULL OR a.at >= $7)
        AND ($8::timestamptz IS NULL OR a.at < $8)
      ORDER BY a.id DESC LIMIT $3`,
    [
      filter.workspaceId,
      filter.beforeId ?? null,
      limit + 1,
      actor?.kind === 'account' ? actor.id : null,
      actor?.kind === 'apiKey' ? actor.id : null,
      filter.action ?? null,
      filter.from ?? null,
      filter.to ?? null,
    ],
  );
  const listed = rows.slice(0, limit).map((r) => ({ row: r, actor: actorOfRow(r) }));
  const names = await actorNames(
    db,
    listed.map((l) => l.actor),
  );
  const entries: AuditEntry[] = listed.map(({ row: r, actor }) => ({
    id: r.id,
    at: r.at,
    actor: {
      kind: r.actor_kind,
      keyId: r.actor_key_id,
      ...actorView(actor, names, r.actor_name),
    },
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
