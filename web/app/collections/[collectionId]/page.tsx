import { type Action, permits } from '@quire/core/roles';
import {
  collectionPath,
  getCollection,
  listCollectionChoices,
  listCollections,
} from '@quire/db/collections';
import { listItems } from '@quire/db/items';
import { lineProgressByCollection, lineProgressByItem } from '@quire/db/review';
import {
  CollectionList,
  CollectionSelect,
  FormNotice,
  ItemTable,
  MetadataFields,
  MetadataList,
  VerificationProgress,
} from '@quire/web/components/Archive';
import { queryValue } from '@quire/web/lib/archiveForms';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import Link from 'next/link';
import { notFound } from 'next/navigation';
import {
  createCollectionAction,
  deleteCollectionAction,
  moveCollectionAction,
  updateCollectionAction,
} from '../actions';

export const dynamic = 'force-dynamic';

const PAGE_SIZE = 50;

async function load(raw: string) {
  const principal = await requirePrincipal();
  if (!/^[1-9][0-9]{0,15}$/.test(raw)) notFound();
  const collection = await getCollection(pool(), principal.workspaceId, Number(raw));
  if (!collection) notFound();
  return { principal, collection };
}

export async function generateMetadata({ params }: { params: Promise<{ collectionId: string }> }) {
  const { collection } = await load((await params).collectionId);
  return { title: `${collection.title} · Quire` };
}

/** F1: one collection: where it sits, what it holds, and the forms that change it. */
export default async function CollectionPage({
  params,
  searchParams,
}: {
  params: Promise<{ collectionId: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { principal, collection } = await load((await params).collectionId);
  const query = await searchParams;
  const after = queryValue(query.after);
  const [path, children, rows, choices] = await Promise.all([
    collectionPath(pool(), principal.workspaceId, collection.id),
    listCollections(pool(), principal.workspaceId, { parentId: collection.id, limit: 200 }),
    listItems(pool(), principal.workspaceId, {
      scope: { kind: 'collection', id: collection.id },
      afterId: after && after.length <= 200 ? after : undefined,
      limit: PAGE_SIZE + 1,
    }),
    listCollectionChoices(pool(), principal.workspaceId),
  ]);
  const items = rows.slice(0, PAGE_SIZE);
  const next = rows.length > PAGE_SIZE ? items[items.length - 1]?.id : undefined;
  // C2: verification beside transcription, for this collection, its children and its items.
  const [verification, itemVerification] = await Promise.all([
    lineProgressByCollection(pool(), principal.workspaceId, [
      collection.id,
      ...children.map((c) => c.id),
    ]),
    lineProgressByItem(
      pool(),
      principal.workspaceId,
      items.map((i) => i.id),
    ),
  ]);
  // R8: the forms are offered only to a role that may arrange the archive.
  const may = (act: Action) => permits(principal.grant, act);
  return (
    <main>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/">Archive</Link>
        {path.map((p) => (
          <span key={p.id}>
            {' '}
            <span aria-hidden="true">/</span> <Link href={`/collections/${p.id}`}>{p.title}</Link>
          </span>
        ))}{' '}
        <span aria-hidden="true">/</span> <span aria-current="page">{collection.title}</span>
      </nav>
      <div className="page-head">
        <div>
          <h1>{collection.title}</h1>
          {collection.description ? <p>{collection.description}</p> : null}
          <p className="muted" data-testid="collection-verification">
            <VerificationProgress
              progress={verification.get(collection.id)}
              label={`Lines of ${collection.title} verified`}
            />
          </p>
          <MetadataList entries={collection.metadata} />
        </div>
        <div className="page-head-actions">
          <Link className="button secondary" href={`/search?collectionId=${collection.id}`}>
            Search this collection
          </Link>
          <a
            className="button secondary"
            href={`/iiif/${principal.workspaceId}/collection/${collection.id}`}
          >
            IIIF collection
          </a>
        </div>
      </div>
      <FormNotice error={queryValue(query.error)} done={queryValue(query.done)} />

      <section aria-labelledby="sub-heading">
        <h2 id="sub-heading">Sub-collections</h2>
        {children.length === 0 ? (
          <p className="muted">None.</p>
        ) : (
          <CollectionList collections={children} verification={verification} />
        )}
        {may('collection.create') ? (
          <form
            action={createCollectionAction}
            className="inline-form"
            aria-label="Create a sub-collection"
            data-act="collection.create"
          >
            <input type="hidden" name="parentId" value={collection.id} />
            <div className="field">
              <label htmlFor="new-sub-title">New sub-collection</label>
              <input id="new-sub-title" name="title" required maxLength={500} />
            </div>
            <div className="field-actions">
              <button type="submit">Create</button>
            </div>
          </form>
        ) : null}
      </section>

      <section aria-labelledby="items-heading">
        <h2 id="items-heading">Items</h2>
        {items.length === 0 && !after ? (
          <p className="muted">
            No items yet. Open an item and choose this collection to move it here.
          </p>
        ) : (
          <ItemTable
            items={items}
            caption={`Items in ${collection.title}`}
            verification={itemVerification}
          />
        )}
        {next ? (
          <p>
            <Link href={`/collections/${collection.id}?after=${encodeURIComponent(next)}`}>
              Next items
            </Link>
          </p>
        ) : null}
      </section>

      {may('collection.update') ? (
        <div className="columns">
          <section aria-labelledby="edit-heading">
            <h2 id="edit-heading">Describe</h2>
            <form
              action={updateCollectionAction}
              className="card stack"
              aria-label="Describe the collection"
              data-act="collection.update"
            >
              <input type="hidden" name="collectionId" value={collection.id} />
              <div className="field">
                <label htmlFor="collection-title">Title</label>
                <input
                  id="collection-title"
                  name="title"
                  required
                  maxLength={500}
                  defaultValue={collection.title}
                />
              </div>
              <div className="field">
                <label htmlFor="collection-description">Description</label>
                <textarea
                  id="collection-description"
                  name="description"
                  maxLength={10000}
                  defaultValue={collection.description ?? ''}
                />
              </div>
              <MetadataFields entries={collection.metadata} />
              <div className="actions">
                <button type="submit">Save</button>
              </div>
            </form>
          </section>
          <section aria-labelledby="move-heading">
            <h2 id="move-heading">Move or delete</h2>
            <form
              action={moveCollectionAction}
              className="card stack"
              aria-label="Move the collection"
              data-act="collection.update"
            >
              <input type="hidden" name="collectionId" value={collection.id} />
              <CollectionSelect
                name="parentId"
                label="Parent collection"
                choices={choices}
                value={collection.parentId}
                rootLabel="None (top level)"
                exclude={collection.id}
              />
              <div className="actions">
                <button type="submit" className="secondary">
                  Move
                </button>
              </div>
            </form>
            <form
              action={deleteCollectionAction}
              className="actions"
              aria-label="Delete the collection"
              data-act="collection.delete"
            >
              <input type="hidden" name="collectionId" value={collection.id} />
              <input type="hidden" name="parentId" value={collection.parentId ?? ''} />
              <button type="submit" className="danger">
                Delete collection
              </button>
              <span className="muted small">Only an empty collection can be deleted.</span>
            </form>
          </section>
        </div>
      ) : null}
    </main>
  );
}
