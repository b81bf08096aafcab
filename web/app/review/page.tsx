import { permits } from '@quire/core/roles';
import { getItem } from '@quire/db/items';
import { ReviewQueue } from '@quire/web/components/ReviewQueue';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import { reviewProgress, reviewQueue } from '@quire/web/services/review';
import Link from 'next/link';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Review · Quire' };

/**
 * V2 V5: the review view. The lines that most need a person (not verified, lowest engine
 * confidence first) one at a time, each with its crop of the scan (or its span of the
 * recording) above its text; worked from the keyboard alone, each line saved as it goes.
 */
export default async function ReviewView({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const principal = await requirePrincipal();
  const query = await searchParams;
  const raw = Array.isArray(query.item) ? query.item[0] : query.item;
  const itemId = raw && raw.length > 0 && raw.length <= 200 ? raw : undefined;
  const [first, progress, item] = await Promise.all([
    reviewQueue(principal, { itemId, pageSize: 50 }),
    reviewProgress(principal, itemId),
    itemId ? getItem(pool(), principal.workspaceId, itemId) : undefined,
  ]);
  // R7: the item by its title, not its id.
  const itemName = itemId ? (item?.title ?? 'Untitled item') : undefined;
  const { lines, pages } = progress;
  return (
    <main className="wide">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/jobs">Jobs</Link> <span aria-hidden="true">/</span>{' '}
        <span>Review{itemName ? ` · ${itemName}` : ''}</span>
      </nav>
      <h1>Review{itemName ? <span className="muted"> · {itemName}</span> : null}</h1>
      <p className="muted" data-testid="review-progress">
        {lines.verified} of {lines.total} lines verified, {lines.edited} edited, {lines.machine} as
        the engine read them
        {lines.imported > 0 ? `, ${lines.imported} as imported (not in the queue)` : ''} ·{' '}
        {pages.fullyVerified} of {pages.total} pages fully verified
      </p>
      <ReviewQueue
        workspaceId={principal.workspaceId}
        itemId={itemId ?? null}
        initial={first}
        mayEdit={permits(principal.grant, 'page.edit')}
      />
    </main>
  );
}
