import 'server-only';
import { decodePageToken, encodePageToken } from '@quire/core/pageToken';
import {
  type LineProgress,
  lineProgress,
  listReviewQueue,
  type ReviewLine,
  reviewRankOf,
} from '@quire/db/review';
import type { Principal } from '@quire/db/workspaces';
import { ApiError } from '@quire/web/lib/errors';
import { config, pool } from '@quire/web/lib/server';

/**
 * V2 V5 V10: what a reviewer reads: the queue of lines that need a person, lowest engine
 * confidence first (imported lines only when asked), and how far a workspace or an item is.
 * For the API and the console alike.
 */

export interface ReviewPage {
  lines: ReviewLine[];
  nextPageToken: string | null;
}

/** V2: one page of the queue; the token is signed and bound to the workspace and the item. */
export async function reviewQueue(
  principal: Principal,
  query: { itemId?: string; includeImported?: boolean; pageSize: number; pageToken?: string },
): Promise<ReviewPage> {
  const includeImported = query.includeImported === true;
  const binding = {
    workspaceId: principal.workspaceId,
    scope: 'review-queue',
    filter: { itemId: query.itemId ?? null, includeImported },
  };
  const secret = config().QUIRE_SECRET_KEY;
  let after: { rank: number; pageId: number; index: number } | undefined;
  if (query.pageToken !== undefined) {
    const cursor: unknown = decodePageToken(secret, binding, query.pageToken);
    if (
      !Array.isArray(cursor) ||
      cursor.length !== 3 ||
      !cursor.every((n) => typeof n === 'number' && Number.isFinite(n))
    ) {
      throw new ApiError('invalid_page_token', 'page token is malformed');
    }
    const [rank, pageId, index] = cursor as [number, number, number];
    after = { rank, pageId, index };
  }
  const rows = await listReviewQueue(pool(), principal.workspaceId, {
    itemId: query.itemId,
    includeImported,
    after,
    limit: query.pageSize + 1,
  });
  const lines = rows.slice(0, query.pageSize);
  const last = lines[lines.length - 1];
  return {
    lines,
    nextPageToken:
      rows.length > query.pageSize && last
        ? encodePageToken(secret, binding, [reviewRankOf(last), last.pageId, last.index])
        : null,
  };
}

/** V5: lines by state and fully verified pages, for the workspace or one of its items. */
export async function reviewProgress(principal: Principal, itemId?: string): Promise<LineProgress> {
  return lineProgress(pool(), principal.workspaceId, itemId);
}
