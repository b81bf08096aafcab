import { DomainError } from '../core/errors';
import type { IiifView } from './interchange';
import type { PoolClient, Queryable } from './pool';

/**
 * I4: each image page's pyramidal derivative. The page row names it (`derivative_key`), which
 * is the reference the U3 fence and the orphan sweep look for beside `blob_key`; the derivative
 * job finds its work here and attaches what it made through the one fenced write below.
 */

/** A decode failure is final: the same bytes never decode later. Other codes are tried again. */
export const FINAL_DERIVATIVE_ERROR = 'undecodable';

export interface DerivativeCandidate {
  pageId: number;
  workspaceId: number;
  masterKey: string;
  mediaType: string | null;
  width: number | null;
  height: number | null;
}

/** Live image pages with a master and no derivative, oldest first; failed ones once `retryBefore` has passed. */
export async function pagesNeedingDerivative(
  db: Queryable,
  retryBefore: Date,
  limit: number,
): Promise<DerivativeCandidate[]> {
  const { rows } = await db.query(
    `SELECT id, workspace_id, blob_key, media_type, width, height FROM pages
      WHERE kind = 'image' AND derivative_key IS NULL AND blob_key IS NOT NULL AND deleted_at IS NULL
        AND (derivative_error IS NULL
             OR (derivative_error <> $1 AND derivative_tried_at < $2))
      ORDER BY id LIMIT $3`,
    [FINAL_DERIVATIVE_ERROR, retryBefore, limit],
  );
  return rows.map((r) => ({
    pageId: Number(r.id),
    workspaceId: r.workspace_id,
    masterKey: r.blob_key,
    mediaType: r.media_type ?? null,
    width: r.width ?? null,
    height: r.height ?? null,
  }));
}

/** The page was deleted, its master changed or another run attached a derivative first. */
export class DerivativeNotAttachedError extends DomainError {
  override name = 'DerivativeNotAttachedError';
  constructor(readonly pageId: number) {
    super('derivative_not_attached', 'the page no longer takes this derivative');
  }
}

/**
 * The fenced write of a derivative, in the transaction that inserts its blob (after
 * `lockBlobForReference`): only a live page still on the same master and without a
 * derivative takes it. The page's row lock orders it against a deletion of the page.
 */
export async function attachDerivative(
  client: PoolClient,
  args: { pageId: number; workspaceId: number; masterKey: string; derivativeKey: string },
): Promise<void> {
  const result = await client.query(
    `UPDATE pages SET derivative_key = $4, derivative_error = NULL, derivative_tried_at = now()
      WHERE id = $1 AND workspace_id = $2 AND blob_key = $3 AND derivative_key IS NULL
        AND deleted_at IS NULL`,
    [args.pageId, args.workspaceId, args.masterKey, args.derivativeKey],
  );
  if (result.rowCount !== 1) throw new DerivativeNotAttachedError(args.pageId);
}

/** Why a try made nothing: a stable code only (never a message that may name a file). */
export async function recordDerivativeFailure(
  db: Queryable,
  pageId: number,
  code: string,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE pages SET derivative_error = $2, derivative_tried_at = $3
      WHERE id = $1 AND derivative_key IS NULL`,
    [pageId, code.slice(0, 64), now],
  );
}

export interface ImageServicePage {
  pageId: number;
  workspaceId: number;
  width: number | null;
  height: number | null;
  masterKey: string;
  mediaType: string | null;
  derivativeKey: string | null;
}

/**
 * The image page behind `/iiif/{ws}/image/{pageId}`, as the view may see it (I1's rules): the
 * workspace's own principal sees every live page, anyone else only published ones.
 */
export async function imageServicePage(
  db: Queryable,
  workspaceId: number,
  pageId: number,
  view: IiifView,
): Promise<ImageServicePage | undefined> {
  const { rows } = await db.query(
    `SELECT p.id, p.workspace_id, p.width, p.height, p.blob_key, p.media_type, p.derivative_key
       FROM pages p JOIN items i ON i.workspace_id = p.workspace_id AND i.id = p.item_id
      WHERE p.workspace_id = $1 AND p.id = $2 AND p.kind = 'image' AND p.blob_key IS NOT NULL
        AND p.deleted_at IS NULL AND i.deleted_at IS NULL
        AND ($3 = 'draft' OR p.published_revision IS NOT NULL)`,
    [workspaceId, pageId, view],
  );
  const r = rows[0];
  if (!r) return undefined;
  return {
    pageId: Number(r.id),
    workspaceId: r.workspace_id,
    width: r.width ?? null,
    height: r.height ?? null,
    masterKey: r.blob_key,
    mediaType: r.media_type ?? null,
    derivativeKey: r.derivative_key ?? null,
  };
}
