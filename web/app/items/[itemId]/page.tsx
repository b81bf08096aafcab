import { THUMBNAIL_EDGE, thumbnailOf } from '@quire/core/interchange/imageApi';
import { permits } from '@quire/core/roles';
import { collectionPath, getCollection, listCollectionChoices } from '@quire/db/collections';
import { listMoveTargets } from '@quire/db/itemPages';
import { listItemPages } from '@quire/db/items';
import { lineProgressByItem } from '@quire/db/review';
import {
  CollectionSelect,
  FormNotice,
  MetadataFields,
  MetadataList,
  Progress,
  VerificationProgress,
} from '@quire/web/components/Archive';
import { PageOrder } from '@quire/web/components/PageOrder';
import { pageImageService, pageThumbnail } from '@quire/web/components/pageImage';
import { queryValue } from '@quire/web/lib/archiveForms';
import { pool } from '@quire/web/lib/server';
import Link from 'next/link';
import { arrangePagesAction, movePageAction, updateItemAction } from '../actions';
import { loadItem } from './item';

export const dynamic = 'force-dynamic';

export async function generateMetadata({ params }: { params: Promise<{ itemId: string }> }) {
  const { item } = await loadItem((await params).itemId);
  return { title: `${item.title ?? 'Untitled item'} · Quire` };
}

/** The order with the page at `from` moved to `to`, as the form sends it. */
function moved(ids: number[], from: number, to: number): string {
  const next = [...ids];
  const [page] = next.splice(from, 1);
  next.splice(to, 0, page!);
  return next.join(',');
}

/** F2: one item: its description, its collection, and its pages in order. */
export default async function ItemPage({
  params,
  searchParams,
}: {
  params: Promise<{ itemId: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { principal, item } = await loadItem((await params).itemId);
  const query = await searchParams;
  const moveSearch = queryValue(query.moveTo)?.slice(0, 200);
  // R8: arranging and describing are offered only to a role that may.
  const arrange = permits(principal.grant, 'item.arrange');
  const [pages, choices, up, collection, targets, verification] = await Promise.all([
    listItemPages(pool(), principal.workspaceId, item.id),
    listCollectionChoices(pool(), principal.workspaceId),
    item.collectionId === null
      ? Promise.resolve([])
      : collectionPath(pool(), principal.workspaceId, item.collectionId),
    item.collectionId === null
      ? Promise.resolve(undefined)
      : getCollection(pool(), principal.workspaceId, item.collectionId),
    arrange
      ? listMoveTargets(pool(), principal.workspaceId, {
          fromItemId: item.id,
          ...(moveSearch ? { search: moveSearch } : {}),
          limit: 50,
        })
      : Promise.resolve([]),
    lineProgressByItem(pool(), principal.workspaceId, [item.id]),
  ]);
  const path = collection ? [...up, { id: collection.id, title: collection.title }] : [];
  const ids = pages.map((p) => p.pageId);
  // R7: an item is shown by its title; its id stays in the line below the heading.
  const name = item.title ?? 'Untitled item';
  return (
    <main className="wide">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/">Archive</Link>
        {path.map((p) => (
          <span key={p.id}>
            {' '}
            <span aria-hidden="true">/</span> <Link href={`/collections/${p.id}`}>{p.title}</Link>
          </span>
        ))}{' '}
        <span aria-hidden="true">/</span> <span aria-current="page">{name}</span>
      </nav>
      <div className="page-head">
        <div>
          <h1>{name}</h1>
          <p className="muted">
            Item <span className="mono">{item.id}</span> · {item.pages}{' '}
            {item.pages === 1 ? 'page' : 'pages'} ·{' '}
            <Progress done={item.transcribedPages} total={item.pages} label="Pages transcribed" /> ·{' '}
            <VerificationProgress
              progress={verification.get(item.id)}
              pages={item.pages}
              label="Lines verified"
            />
          </p>
          <MetadataList entries={item.metadata} />
        </div>
        <div className="page-head-actions">
          {pages.some((p) => p.hasMedia) ? (
            <Link
              className="button"
              href={`/items/${encodeURIComponent(item.id)}/viewer`}
              prefetch={false}
            >
              Open in viewer
            </Link>
          ) : null}
          <a
            className="button secondary"
            href={`/iiif/${principal.workspaceId}/${encodeURIComponent(item.id)}/manifest`}
          >
            IIIF manifest
          </a>
          {pages.some((p) => p.kind === 'image') ? (
            // C2, I7: the searchable PDF, drafts included, through the session like the manifest.
            <a
              className="button secondary"
              href={`/iiif/${principal.workspaceId}/${encodeURIComponent(item.id)}/pdf`}
              download
            >
              Searchable PDF
            </a>
          ) : null}
        </div>
      </div>
      <FormNotice error={queryValue(query.error)} done={queryValue(query.done)} />

      <section aria-labelledby="pages-heading">
        <h2 id="pages-heading">Pages in order</h2>
        {arrange && pages.length > 0 && (
          <search>
            <form method="get" className="inline-form" aria-label="Find items to move pages to">
              <label htmlFor="move-search">Move pages to an item titled</label>{' '}
              <input
                id="move-search"
                name="moveTo"
                type="search"
                maxLength={200}
                defaultValue={moveSearch ?? ''}
                placeholder="Any title; recent items when empty"
              />{' '}
              <button type="submit" className="secondary">
                Find items
              </button>
            </form>
          </search>
        )}
        {pages.length === 0 ? (
          <p className="muted">This item has no pages.</p>
        ) : (
          <PageOrder
            itemId={item.id}
            mayArrange={arrange}
            pages={pages.map((page, i) => ({
              pageId: page.pageId,
              label: `page ${i + 1}`,
              content: (
                <>
                  <Link
                    href={`/pages/${page.pageId}`}
                    aria-label={`Open page ${i + 1} (page ${page.pageId})`}
                  >
                    {page.kind === 'image' && page.hasMedia ? (
                      // biome-ignore lint/performance/noImgElement: a private, session-authorised blob, not an optimisable asset
                      <img
                        src={thumbnailSrc(principal.workspaceId, page)}
                        alt={`Thumbnail of page ${i + 1}`}
                        loading="lazy"
                      />
                    ) : (
                      <span className="muted">
                        {page.kind === 'audio' ? 'Recording' : 'No image'}
                      </span>
                    )}
                  </Link>
                  <span>
                    Page {i + 1}{' '}
                    <span className="muted small">
                      · {page.lines} {page.lines === 1 ? 'line' : 'lines'} · revision{' '}
                      {page.revision}
                    </span>
                  </span>
                  {arrange ? (
                    <div className="inline-form">
                      <form action={arrangePagesAction} data-act="item.arrange">
                        <input type="hidden" name="itemId" value={item.id} />
                        <input
                          type="hidden"
                          name="order"
                          value={moved(ids, i, Math.max(0, i - 1))}
                        />
                        <button
                          type="submit"
                          className="secondary"
                          disabled={i === 0}
                          aria-label={`Move page ${i + 1} earlier`}
                        >
                          Earlier
                        </button>
                      </form>
                      <form action={arrangePagesAction} data-act="item.arrange">
                        <input type="hidden" name="itemId" value={item.id} />
                        <input
                          type="hidden"
                          name="order"
                          value={moved(ids, i, Math.min(ids.length - 1, i + 1))}
                        />
                        <button
                          type="submit"
                          className="secondary"
                          disabled={i === ids.length - 1}
                          aria-label={`Move page ${i + 1} later`}
                        >
                          Later
                        </button>
                      </form>
                    </div>
                  ) : null}
                  {arrange && targets.length > 0 ? (
                    <form
                      action={movePageAction}
                      className="stack move-form"
                      data-act="item.arrange"
                    >
                      <input type="hidden" name="itemId" value={item.id} />
                      <input type="hidden" name="pageId" value={page.pageId} />
                      <select
                        name="targetItemId"
                        required
                        aria-label={`Item to move page ${i + 1} to`}
                      >
                        {targets.map((t) => (
                          <option key={t.id} value={t.id}>
                            {t.title ? `${t.title} (${t.id})` : t.id}
                          </option>
                        ))}
                      </select>
                      <button
                        type="submit"
                        className="secondary"
                        aria-label={`Move page ${i + 1} to the chosen item`}
                      >
                        Move
                      </button>
                    </form>
                  ) : null}
                </>
              ),
            }))}
          />
        )}
      </section>

      {permits(principal.grant, 'item.update') ? (
        <section aria-labelledby="describe-heading">
          <h2 id="describe-heading">Describe</h2>
          <form
            action={updateItemAction}
            className="card stack"
            aria-label="Describe the item"
            data-act="item.update"
          >
            <input type="hidden" name="itemId" value={item.id} />
            <div className="field">
              <label htmlFor="item-title">Title</label>
              <input id="item-title" name="title" maxLength={500} defaultValue={item.title ?? ''} />
            </div>
            <CollectionSelect
              name="collectionId"
              label="Collection"
              choices={choices}
              value={item.collectionId}
              rootLabel="None (top level)"
            />
            <div className="field">
              <label htmlFor="item-language">Language</label>
              <input
                id="item-language"
                name="language"
                maxLength={35}
                defaultValue={item.language ?? ''}
                aria-describedby="item-language-hint"
              />
              <span id="item-language-hint" className="muted small">
                A tag such as en or de; search then matches word forms in that language.
              </span>
            </div>
            <MetadataFields entries={item.metadata} />
            <div className="actions">
              <button type="submit">Save</button>
            </div>
          </form>
        </section>
      ) : null}
    </main>
  );
}

/**
 * F2 with I4 and V7: a page's thumbnail from its Image API service (the pyramid once it is
 * made), never the master; a page whose size is not known yet asks the service to fit it.
 */
function thumbnailSrc(
  workspaceId: number,
  page: { pageId: number; width: number | null; height: number | null },
): string {
  const service = pageImageService(workspaceId, page.pageId);
  if (!page.width || !page.height) return pageThumbnail(service, THUMBNAIL_EDGE);
  return thumbnailOf(service, { width: page.width, height: page.height }).id;
}
