import { permits } from '@quire/core/roles';
import { listCollections } from '@quire/db/collections';
import { listItems } from '@quire/db/items';
import { lineProgressByCollection, lineProgressByItem } from '@quire/db/review';
import { CollectionList, FormNotice, ItemTable } from '@quire/web/components/Archive';
import { queryValue } from '@quire/web/lib/archiveForms';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import Link from 'next/link';
import { createCollectionAction } from './collections/actions';

export const metadata = { title: 'Archive · Quire' };
export const dynamic = 'force-dynamic';

const PAGE_SIZE = 50;

/**
 * F4: the console's home. An editor lands on the archive: the workspace's top collections and
 * the items in no collection, each with its pages and progress; jobs, batches and operations
 * stay in the navigation.
 */
export default async function ArchiveHome({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const principal = await requirePrincipal();
  const query = await searchParams;
  const after = queryValue(query.after);
  const [collections, rows] = await Promise.all([
    listCollections(pool(), principal.workspaceId, { parentId: null, limit: 200 }),
    listItems(pool(), principal.workspaceId, {
      scope: { kind: 'root' },
      afterId: after && after.length <= 200 ? after : undefined,
      limit: PAGE_SIZE + 1,
    }),
  ]);
  const items = rows.slice(0, PAGE_SIZE);
  const next = rows.length > PAGE_SIZE ? items[items.length - 1]?.id : undefined;
  // C2: how far people have verified, beside how far the engines have transcribed.
  const [verification, itemVerification] = await Promise.all([
    lineProgressByCollection(
      pool(),
      principal.workspaceId,
      collections.map((c) => c.id),
    ),
    lineProgressByItem(
      pool(),
      principal.workspaceId,
      items.map((i) => i.id),
    ),
  ]);
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Archive</h1>
          <p className="muted">
            Collections and the documents (items) in them, each with its pages in order.
          </p>
        </div>
        <div className="page-head-actions">
          <Link className="button secondary" href="/search">
            Search
          </Link>
          {permits(principal.grant, 'batch.create') ? (
            <Link className="button" href="/upload" data-act="batch.create">
              Upload files
            </Link>
          ) : null}
        </div>
      </div>
      <FormNotice error={queryValue(query.error)} done={queryValue(query.done)} />

      <section aria-labelledby="collections-heading">
        <h2 id="collections-heading">Collections</h2>
        {collections.length === 0 ? (
          <p className="muted">No collections yet: a fonds, a series, a box or a project.</p>
        ) : (
          <CollectionList collections={collections} verification={verification} />
        )}
        {permits(principal.grant, 'collection.create') ? (
          <form
            action={createCollectionAction}
            className="inline-form"
            aria-label="Create a collection"
            data-act="collection.create"
          >
            <div className="field">
              <label htmlFor="new-collection-title">New collection</label>
              <input id="new-collection-title" name="title" required maxLength={500} />
            </div>
            <div className="field-actions">
              <button type="submit">Create collection</button>
            </div>
          </form>
        ) : null}
      </section>

      <section aria-labelledby="items-heading">
        <h2 id="items-heading">Items in no collection</h2>
        {items.length === 0 && !after ? (
          <section className="empty card">
            <h3>No items here</h3>
            {permits(principal.grant, 'batch.create') ? (
              <p className="muted">
                <Link href="/upload" data-act="batch.create">
                  Upload files
                </Link>
                ; each upload's files become the pages of an item.
              </p>
            ) : null}
          </section>
        ) : (
          <ItemTable
            items={items}
            caption="Items in no collection"
            verification={itemVerification}
          />
        )}
        {next ? (
          <p>
            <Link href={`/?after=${encodeURIComponent(next)}`}>Next items</Link>
          </p>
        ) : null}
      </section>
    </main>
  );
}
