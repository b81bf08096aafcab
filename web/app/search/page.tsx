import { MEDIA_KINDS } from '@quire/core/media';
import { listCollectionChoices } from '@quire/db/collections';
import type { SearchHit } from '@quire/db/search';
import { CollectionSelect, itemHref, SnippetText } from '@quire/web/components/Archive';
import { queryValue } from '@quire/web/lib/archiveForms';
import { refusalOf } from '@quire/web/lib/errors';
import { searchQuery } from '@quire/web/lib/schemas';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import { search } from '@quire/web/services/archive';
import Link from 'next/link';

export const metadata = { title: 'Search · Quire' };
export const dynamic = 'force-dynamic';

/**
 * F3: search the workspace or one collection (and what is below it). Each hit names its item
 * and page and shows the lines that matched with the words marked; a line opens the page
 * with that line selected and its box outlined (`/pages/{id}?line=N`).
 */
export default async function SearchPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const principal = await requirePrincipal();
  const query = await searchParams;
  const q = queryValue(query.q)?.trim() ?? '';
  const rawCollection = queryValue(query.collectionId) ?? '';
  const rawKind = queryValue(query.kind) ?? '';
  const rawState = queryValue(query.lineState) ?? '';
  const parsed = searchQuery.safeParse({
    q,
    limit: 50,
    ...(rawCollection ? { collectionId: rawCollection } : {}),
    ...(rawKind ? { kind: rawKind } : {}),
    ...(rawState ? { lineState: rawState } : {}),
  });
  const choices = await listCollectionChoices(pool(), principal.workspaceId);
  let hits: SearchHit[] | undefined;
  let problem: string | undefined;
  if (q !== '' && parsed.success) {
    try {
      hits = await search(principal, parsed.data);
    } catch (error) {
      problem = refusalOf(error).message;
    }
  } else if (q !== '') {
    problem = 'Search for at most 200 characters.';
  }
  const collectionId = parsed.success ? (parsed.data.collectionId ?? null) : null;
  return (
    <main>
      <h1>Search</h1>
      <form method="get" className="filters card" aria-label="Search the archive">
        <div className="field">
          <label htmlFor="search-q">Words</label>
          <input id="search-q" name="q" type="search" defaultValue={q} required maxLength={200} />
        </div>
        <CollectionSelect
          name="collectionId"
          label="In collection"
          choices={choices}
          value={collectionId}
          rootLabel="The whole workspace"
        />
        <div className="field">
          <label htmlFor="search-kind">Kind</label>
          <select
            id="search-kind"
            name="kind"
            defaultValue={parsed.success ? (parsed.data.kind ?? '') : ''}
          >
            <option value="">Images and recordings</option>
            {MEDIA_KINDS.map((k) => (
              <option key={k} value={k}>
                {k === 'image' ? 'Images' : 'Recordings'}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="search-state">Lines</label>
          <select
            id="search-state"
            name="lineState"
            defaultValue={parsed.success ? (parsed.data.lineState ?? '') : ''}
          >
            <option value="">Every line</option>
            <option value="verified">Verified by a person</option>
            <option value="edited">Edited, not yet verified</option>
            <option value="machine">As the engine read them</option>
          </select>
        </div>
        <div className="field-actions">
          <button type="submit">Search</button>
        </div>
      </form>
      {problem ? (
        <p role="alert" className="notice notice-error">
          {problem}
        </p>
      ) : null}
      {hits ? (
        <section aria-labelledby="hits-heading">
          <h2 id="hits-heading">
            {hits.length === 0
              ? 'No pages match'
              : hits.length === 1
                ? '1 page matches'
                : `${hits.length} pages match`}
          </h2>
          <ol className="hits">
            {hits.map((hit) => (
              <li key={hit.pageId} className="card" data-hit={hit.pageId}>
                <h3>
                  <Link href={itemHref(hit.itemId)}>{hit.itemTitle ?? hit.itemId}</Link>{' '}
                  <span className="muted small">
                    · page {hit.position + 1} ({hit.kind === 'image' ? 'image' : 'recording'})
                  </span>
                </h3>
                <ul className="hit-lines">
                  {hit.lines.map((line) => (
                    <li key={line.segmentIndex}>
                      <Link
                        href={`/pages/${hit.pageId}?line=${line.segmentIndex}`}
                        data-line={line.segmentIndex}
                      >
                        <span className="muted small">Line {line.segmentIndex + 1}: </span>
                        <SnippetText snippet={line.snippet} />
                      </Link>
                    </li>
                  ))}
                  {hit.lines.length === 0 ? (
                    <li>
                      <Link href={`/pages/${hit.pageId}`}>Open the page</Link>
                    </li>
                  ) : null}
                </ul>
              </li>
            ))}
          </ol>
        </section>
      ) : null}
    </main>
  );
}
