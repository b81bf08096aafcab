import type { MediaKind } from '../../core/media';
import { createPage, type NewPage, prepareItem } from '../../db/ingest';
import { type Pool, withTransaction } from '../../db/pool';

/** The public base URL the tests' canvas URIs are minted under. */
export const TEST_PUBLIC_URL = 'http://quire.test';

export type SeededPage = Omit<NewPage, 'itemId' | 'position' | 'kind'> & {
  itemId?: string;
  kind?: MediaKind;
};

/**
 * A page seeded as an ingest writes one (db/ingest.ts, the only writer of new pages): its item
 * prepared, the page appended at the item's next position at revision 0, with no media
 * unless given (the simulated engine reads none).
 */
export async function seedPage(
  pool: Pool,
  page: SeededPage,
): Promise<{ pageId: number; canvasUri: string }> {
  const itemId = page.itemId ?? 'item-1';
  return withTransaction(pool, async (tx) => {
    const position = await prepareItem(tx, page.workspaceId, itemId);
    return createPage(
      tx,
      { ...page, itemId, position, kind: page.kind ?? 'image' },
      TEST_PUBLIC_URL,
    );
  });
}
