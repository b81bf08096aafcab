import {
  type ActorNames,
  type ActorView,
  actorView,
  type EditChannel,
  editedByReference,
  type WorkspaceActor,
} from '../core/actor';
import { type AnnotationPage, type Segment, segmentsOf } from '../core/annotation';
import { revisionChanges, speakersChanged } from '../core/lineStates';
import type { MediaKind } from '../core/media';
import { actorNames } from './actors';
import { type AuditActor, recordAudit } from './auditLog';
import { scheduleBlobDeletion } from './blobs';
import { NotFoundError } from './errors';
import { appendEvent } from './events';
import { type Pool, type PoolClient, type Queryable, withTransaction } from './pool';
import { commitRevision, type RevisionProvenance, type RevisionWriteOutcome } from './revisions';

export interface PageRow {
  id: number;
  workspaceId: number;
  itemId: string;
  position: number;
  kind: MediaKind;
  canvasUri: string;
  blobKey: string | null;
  mediaType: string | null;
  width: number | null;
  height: number | null;
  durationMs: number | null;
  revision: number;
  annotationPage: AnnotationPage;
  publishedRevision: number | null;
}

const PAGE_COLUMNS = `id, workspace_id, item_id, position, kind, canvas_uri, blob_key, media_type, width, height,
  duration_ms, revision, annotation_page, published_revision`;

function toPage(r: Record<string, unknown>): PageRow {
  return {
    id: r.id as number,
    workspaceId: r.workspace_id as number,
    itemId: r.item_id as string,
    position: r.position as number,
    kind: r.kind as MediaKind,
    canvasUri: r.canvas_uri as string,
    blobKey: (r.blob_key as string | null) ?? null,
    mediaType: (r.media_type as string | null) ?? null,
    width: (r.width as number | null) ?? null,
    height: (r.height as number | null) ?? null,
    durationMs: (r.duration_ms as number | null) ?? null,
    revision: r.revision as number,
    annotationPage: r.annotation_page as AnnotationPage,
    publishedRevision: (r.published_revision as number | null) ?? null,
  };
}

export async function getPage(
  db: Queryable,
  workspaceId: number,
  pageId: number,
): Promise<PageRow | undefined> {
  const { rows } = await db.query(
    `SELECT ${PAGE_COLUMNS} FROM pages WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL`,
    [workspaceId, pageId],
  );
  return rows[0] ? toPage(rows[0]) : undefined;
}

export async function getPageForUpdate(client: PoolClient, workspaceId: number, pageId: number) {
  const { rows } = await client.query(
    `SELECT ${PAGE_COLUMNS} FROM pages WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE`,
    [workspaceId, pageId],
  );
  return rows[0] ? toPage(rows[0]) : undefined;
}

/**
 * The page a running attempt reads (media, kind, duration, current annotation), by id alone:
 * the attempt's fence already ties it to its workspace.
 */
export async function readAttemptPage(db: Queryable, pageId: number): Promise<PageRow> {
  const { rows } = await db.query(`SELECT ${PAGE_COLUMNS} FROM pages WHERE id = $1`, [pageId]);
  if (!rows[0]) throw new Error(`page ${pageId} not found`);
  return toPage(rows[0]);
}

/**
 * T2/U3 V6: once an engine holds a recording and its job id is saved (same transaction), our
 * copy is released when the workspace says `delete-after-recognition` (patient audio stays no
 * longer than it must); the cleanup deletes it, fenced against new references. A workspace
 * that keeps its recordings (`keep`) keeps this one, under its quota.
 */
export async function releaseRecordedAudio(
  client: PoolClient,
  workspaceId: number,
  pageId: number,
): Promise<void> {
  const released = await client.query(
    `UPDATE pages p SET blob_key = NULL, updated_at = now()
       FROM pages old, workspaces w
      WHERE p.id = old.id AND p.id = $1 AND old.blob_key IS NOT NULL
        AND w.id = p.workspace_id AND w.recording_retention = 'delete-after-recognition'
     RETURNING old.blob_key AS key`,
    [pageId],
  );
  if (released.rows[0]) {
    await scheduleBlobDeletion(client, workspaceId, released.rows[0].key);
  }
}

/**
 * A human edit by compare-and-set on the revision the editor read (If-Match), in the caller's
 * transaction. A page past that revision changes nothing and reports the current one
 * (`RevisionConflict`); a page of another workspace, or none, is not found.
 */
export async function savePageEdit(
  client: PoolClient,
  args: {
    workspaceId: number;
    pageId: number;
    expectedRevision: number;
    segments: Segment[];
    language?: string;
    author: WorkspaceActor;
    channel: EditChannel;
    /** V11: the edit named speakers and nothing else. */
    change?: 'speakers';
  },
): Promise<RevisionWriteOutcome> {
  const page = await getPageForUpdate(client, args.workspaceId, args.pageId);
  if (!page) throw new NotFoundError('page_not_found', 'page not found');
  const written = await commitRevision(client, {
    pageId: page.id,
    expectedRevision: args.expectedRevision,
    segments: args.segments,
    language: args.language,
    provenance: {
      source: 'human',
      author: args.author,
      channel: args.channel,
      ...(args.change ? { change: args.change } : {}),
    },
  });
  if (written.state === 'committed') {
    // R10: each person's revision in the audit log, with how many lines it edited and verified
    // (V11: and how many lines it named a speaker for, when it did).
    const before = segmentsOf(page.annotationPage);
    const speakers = speakersChanged(before, args.segments);
    await recordAudit(client, args.author, {
      action: 'page.edit',
      target: `pages/${page.id}`,
      workspaceId: page.workspaceId,
      before: { revision: page.revision },
      after: {
        revision: written.revision,
        ...revisionChanges(before, args.segments),
        ...(speakers > 0 ? { speakers } : {}),
      },
    });
  }
  return written;
}

export interface RevisionSummary {
  revision: number;
  source: RevisionProvenance['source'];
  engine: string | null;
  model: string | null;
  modelVersion: string | null;
  jobId: string | null;
  attemptNumber: number | null;
  /** The account or API key that edited, as a reference (`console:account:7`), since before R5. */
  editedBy: string | null;
  /** R5 R7: the account or API key behind `editedBy`, by name (null for engine and import revisions). */
  editedByActor: ActorView | null;
  /** I3: where an imported revision came from (format, namespace, producer, file hash). */
  provenance: Record<string, unknown> | null;
  createdAt: Date;
}

/** The author of a human revision, from its typed columns (null: none was recorded). */
function authorOf(r: Record<string, unknown>): WorkspaceActor | null {
  const id = r.author_id as number | null;
  if (id === null) return null;
  return r.author_kind === 'account' ? { kind: 'account', id } : { kind: 'apiKey', id };
}

function toRevision(r: Record<string, unknown>, names: ActorNames): RevisionSummary {
  const author = authorOf(r);
  return {
    revision: r.revision as number,
    source: r.source as RevisionSummary['source'],
    engine: (r.engine as string | null) ?? null,
    model: (r.model as string | null) ?? null,
    modelVersion: (r.model_version as string | null) ?? null,
    jobId: (r.job_id as string | null) ?? null,
    attemptNumber: (r.attempt_number as number | null) ?? null,
    editedBy: author ? editedByReference(author, r.edit_channel as EditChannel) : null,
    editedByActor: author ? actorView(author, names) : null,
    provenance: (r.provenance as Record<string, unknown> | null) ?? null,
    createdAt: r.created_at as Date,
  };
}

/** Revision rows as the API and the console show them, their authors named in one lookup. */
async function toRevisions(
  db: Queryable,
  rows: Record<string, unknown>[],
): Promise<RevisionSummary[]> {
  const authors = rows.map(authorOf).filter((a) => a !== null);
  const names = await actorNames(db, authors);
  return rows.map((r) => toRevision(r, names));
}

const REVISION_COLUMNS = `r.revision, r.source, r.engine, r.model, r.model_version, r.job_id, r.attempt_number,
  r.author_kind, r.author_id, r.edit_channel, r.provenance, r.created_at`;

/** A page's revision history with provenance, newest first; undefined for another workspace's page. */
export async function listRevisions(
  db: Queryable,
  workspaceId: number,
  pageId: number,
  options: { beforeRevision?: number; limit: number },
): Promise<RevisionSummary[] | undefined> {
  const page = await db.query(
    'SELECT 1 FROM pages WHERE workspace_id = $1 AND id = $2 AND deleted_at IS NULL',
    [workspaceId, pageId],
  );
  if (page.rowCount === 0) return undefined;
  const { rows } = await db.query(
    `SELECT ${REVISION_COLUMNS} FROM page_revisions r
      WHERE r.page_id = $1 AND ($2::int IS NULL OR r.revision < $2)
      ORDER BY r.revision DESC LIMIT $3`,
    [pageId, options.beforeRevision ?? null, options.limit],
  );
  return toRevisions(db, rows);
}

export async function getRevision(
  db: Queryable,
  workspaceId: number,
  pageId: number,
  revision: number,
): Promise<(RevisionSummary & { annotationPage: AnnotationPage }) | undefined> {
  const { rows } = await db.query(
    `SELECT ${REVISION_COLUMNS}, r.annotation_page FROM page_revisions r JOIN pages p ON p.id = r.page_id
      WHERE p.workspace_id = $1 AND r.page_id = $2 AND r.revision = $3`,
    [workspaceId, pageId, revision],
  );
  const row = rows[0];
  if (!row) return undefined;
  const [summary] = await toRevisions(db, [row]);
  return { ...summary!, annotationPage: row.annotation_page as AnnotationPage };
}

/**
 * E3: the coalescing, revision-fenced mirror row of a page. An older revision never overwrites
 * a newer one: the upsert only moves a row forward, and a newer revision resets its delivery.
 * Returns false when the row already holds this or a newer revision.
 */
export async function upsertMirrorRow(
  client: Queryable,
  row: { pageId: number; workspaceId: number; revision: number },
): Promise<boolean> {
  const result = await client.query(
    `INSERT INTO mirror_outbox AS m (page_id, workspace_id, revision, status, attempts, next_attempt_at)
     VALUES ($1, $2, $3, 'pending', 0, now())
     ON CONFLICT (page_id) DO UPDATE
        SET revision = EXCLUDED.revision, status = 'pending', attempts = 0, next_attempt_at = now(),
            last_error = NULL, updated_at = now()
      WHERE m.revision < EXCLUDED.revision`,
    [row.pageId, row.workspaceId, row.revision],
  );
  return result.rowCount === 1;
}

export type PublishResult =
  | { state: 'published'; revision: number; eventId: number }
  | { state: 'unchanged'; revision: number }
  | { state: 'mismatch'; revision: number }
  | { state: 'missing' };

/**
 * E3: publication, separate from completion. In one transaction, with the page locked (lock
 * order page first, as everywhere): the revision check, the public snapshot, the mirror row and
 * the publication event with E2 correlation data. Publishing the revision already published
 * changes nothing and emits nothing.
 */
export async function publishPage(
  pool: Pool,
  args: {
    workspaceId: number;
    pageId: number;
    expectedRevision: number;
    /** R5: who publishes; recorded in the audit log in the same transaction. */
    actor?: AuditActor;
  },
): Promise<PublishResult> {
  return withTransaction(pool, async (client) => {
    const page = await getPageForUpdate(client, args.workspaceId, args.pageId);
    if (!page) return { state: 'missing' as const };
    if (page.revision !== args.expectedRevision)
      return { state: 'mismatch' as const, revision: page.revision };
    if (page.publishedRevision === page.revision)
      return { state: 'unchanged' as const, revision: page.revision };
    const updated = await client.query(
      `UPDATE pages SET published_revision = revision, published_snapshot = annotation_page, updated_at = now()
        WHERE id = $1 AND revision = $2`,
      [page.id, page.revision],
    );
    if (updated.rowCount !== 1) throw new Error('page changed while locked');
    if (args.actor) {
      await recordAudit(client, args.actor, {
        action: 'page.publish',
        target: `pages/${page.id}`,
        workspaceId: page.workspaceId,
        before: { publishedRevision: page.publishedRevision },
        after: { publishedRevision: page.revision },
      });
    }
    await upsertMirrorRow(client, {
      pageId: page.id,
      workspaceId: page.workspaceId,
      revision: page.revision,
    });
    // E2: the caller's correlation data comes from the job that produced this revision, or
    // from the item for a human or initial revision.
    const { rows } = await client.query(
      `SELECT i.external_reference_id AS item_ref, i.metadata AS item_metadata, r.source, r.job_id,
              j.idempotency_key, j.external_reference_id AS job_ref, j.metadata AS job_metadata
         FROM pages p
         JOIN items i ON i.workspace_id = p.workspace_id AND i.id = p.item_id
         LEFT JOIN page_revisions r ON r.page_id = p.id AND r.revision = p.revision
         LEFT JOIN transcription_jobs j ON j.id = r.job_id
        WHERE p.id = $1`,
      [page.id],
    );
    const c = rows[0] ?? {};
    const eventId = await appendEvent(client, {
      workspaceId: page.workspaceId,
      type: 'dev.quire.annotations.published',
      subject: `pages/${page.id}`,
      data: {
        workspaceId: page.workspaceId,
        pageId: page.id,
        itemId: page.itemId,
        canvasUri: page.canvasUri,
        revision: page.revision,
        previousPublishedRevision: page.publishedRevision,
        source: c.source ?? null,
        jobId: c.job_id ?? null,
        externalReferenceId: c.job_ref ?? c.item_ref ?? null,
        idempotencyKey: c.idempotency_key ?? null,
        metadata: c.job_metadata ?? c.item_metadata ?? {},
      },
    });
    return { state: 'published' as const, revision: page.revision, eventId };
  });
}
