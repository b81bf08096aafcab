'use server';
import { requirePrincipal } from '@quire/web/lib/session';
import { type ReviewPage, reviewQueue } from '@quire/web/services/review';

/** V2: the next page of the review queue, for the console's review view. */
export async function loadReviewPageAction(input: {
  itemId: string | null;
  pageToken: string;
}): Promise<ReviewPage | { error: string }> {
  const principal = await requirePrincipal();
  if (typeof input.pageToken !== 'string' || input.pageToken.length > 2048) {
    return { error: 'The request was malformed.' };
  }
  try {
    return await reviewQueue(principal, {
      itemId: input.itemId ?? undefined,
      pageSize: REVIEW_PAGE_SIZE,
      pageToken: input.pageToken,
    });
  } catch {
    return { error: 'The queue could not be read; reload the page.' };
  }
}

const REVIEW_PAGE_SIZE = 50;
