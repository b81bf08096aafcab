import { hashToken, newAttemptToken } from '../../core/attemptToken';
import type { MediaKind } from '../../core/media';
import { buildSnapshot } from '../../core/pricing';
import { claimAttempt } from '../../db/attempts';
import type { AttemptFence } from '../../db/fence';
import { createPage, type NewPage, prepareItem } from '../../db/ingest';
import { createJob } from '../../db/jobs';
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

/**
 * A job on a seeded page with its first attempt claimed through the real claim (A1), as a
 * worker holds it: the fence every write of that attempt goes through.
 */
export async function seedRunningAttempt(pool: Pool, page: SeededPage) {
  const { pageId } = await seedPage(pool, page);
  const { job } = await withTransaction(pool, (tx) =>
    createJob(tx, {
      workspaceId: page.workspaceId,
      pageId,
      snapshot: buildSnapshot({ provider: 'simulated' }),
    }),
  );
  const tokenHash = hashToken(newAttemptToken());
  const claim = await claimAttempt(pool, { jobId: job.id, owner: 'w', tokenHash, maxAttempts: 5 });
  if (claim.state !== 'claimed') throw new Error(`claim ${claim.state}`);
  const fence: AttemptFence = { jobId: job.id, attemptNumber: claim.attemptNumber, tokenHash };
  return { pageId, job, claim, fence };
}
