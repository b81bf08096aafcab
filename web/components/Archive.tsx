import { type MetadataEntry, type Snippet, snippetParts } from '@quire/core/archive';
import type { CollectionSummary } from '@quire/db/collections';
import type { ItemSummary } from '@quire/db/items';
import { ARCHIVE_DONE } from '@quire/web/lib/archiveForms';
import { sentenceOf } from '@quire/web/lib/errors';
import Link from 'next/link';

/** F1-F4: the pieces the archive's pages share: lists, progress, metadata rows, snippets. */

export const itemHref = (id: string) => `/items/${encodeURIComponent(id)}`;

/** The outcome of the last form, from `?error=` or `?done=`. */
export function FormNotice({ error, done }: { error?: string; done?: string }) {
  if (error) {
    return (
      <p role="alert" className="notice notice-error" data-code={error}>
        {sentenceOf(error) ?? 'That could not be done; nothing was changed. Try again.'}
      </p>
    );
  }
  if (done && ARCHIVE_DONE[done]) {
    return (
      <p role="status" className="notice notice-ok">
        {ARCHIVE_DONE[done]}
      </p>
    );
  }
  return null;
}

export function Progress({ done, total, label }: { done: number; total: number; label: string }) {
  return (
    <span className="progress">
      <progress value={done} max={Math.max(total, 1)} aria-label={label} />{' '}
      <span>
        {done} of {total} transcribed
      </span>
    </span>
  );
}

/** C2, V5: lines verified of all lines, and pages whose every line is verified. */
export interface Verification {
  verified: number;
  total: number;
  fullyVerifiedPages: number;
}

export function VerificationProgress({
  progress,
  pages,
  label,
}: {
  progress: Verification | undefined;
  /** Pages in scope, when known, for "n of m pages fully verified". */
  pages?: number;
  label: string;
}) {
  const p = progress ?? { verified: 0, total: 0, fullyVerifiedPages: 0 };
  if (p.total === 0) return <span className="muted small">no lines to verify yet</span>;
  return (
    <span className="progress" data-verified={`${p.verified}/${p.total}`}>
      <progress value={p.verified} max={p.total} aria-label={label} />{' '}
      <span>
        {p.verified} of {p.total} lines verified
        <span className="muted small">
          {' '}
          · {p.fullyVerifiedPages}
          {pages !== undefined ? ` of ${pages}` : ''}{' '}
          {p.fullyVerifiedPages === 1 && pages === undefined ? 'page' : 'pages'} fully verified
        </span>
      </span>
    </span>
  );
}

export function CollectionList({
  collections,
  verification,
}: {
  collections: CollectionSummary[];
  verification?: Map<number, Verification>;
}) {
  return (
    <ul className="cards" aria-label="Collections">
      {collections.map((c) => (
        <li key={c.id} className="card" data-collection={c.id}>
          <h3>
            <Link href={`/collections/${c.id}`}>{c.title}</Link>
          </h3>
          <p className="muted small">
            {c.collections === 1 ? '1 sub-collection' : `${c.collections} sub-collections`} ·{' '}
            {c.items === 1 ? '1 item' : `${c.items} items`}
          </p>
          {verification ? (
            <p className="small">
              <VerificationProgress
                progress={verification.get(c.id)}
                label={`Lines of ${c.title} verified`}
              />
            </p>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

export function ItemTable({
  items,
  caption,
  verification,
}: {
  items: ItemSummary[];
  caption: string;
  verification?: Map<string, Verification>;
}) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Item</th>
            <th scope="col">Pages</th>
            <th scope="col">Progress</th>
            {verification ? <th scope="col">Verified</th> : null}
          </tr>
        </thead>
        <tbody>
          {items.map((item) => (
            <tr key={item.id} data-item={item.id}>
              <td data-label="Item">
                <Link href={itemHref(item.id)}>{item.title ?? item.id}</Link>
                {item.title ? <span className="muted small mono"> {item.id}</span> : null}
              </td>
              <td data-label="Pages">{item.pages}</td>
              <td data-label="Progress">
                <Progress
                  done={item.transcribedPages}
                  total={item.pages}
                  label={`Pages of ${item.title ?? item.id} transcribed`}
                />
              </td>
              {verification ? (
                <td data-label="Verified">
                  <VerificationProgress
                    progress={verification.get(item.id)}
                    pages={item.pages}
                    label={`Lines of ${item.title ?? item.id} verified`}
                  />
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** F1 F2 C2: the metadata rows of a form, added as needed (a client component). */
export { MetadataFields } from './MetadataFields';

export function MetadataList({ entries }: { entries: MetadataEntry[] }) {
  if (entries.length === 0) return null;
  return (
    <dl className="metadata">
      {entries.map((e, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: labels may repeat; the order is the identity
        <div key={i}>
          <dt>{e.label}</dt>
          <dd>{e.value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** A search snippet with its matched words marked; plain text, never HTML from the server. */
export function SnippetText({ snippet }: { snippet: Snippet }) {
  return (
    <span className="snippet">
      {snippetParts(snippet).map((part, i) =>
        part.marked ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: parts are positional
          <mark key={i}>{part.text}</mark>
        ) : (
          // biome-ignore lint/suspicious/noArrayIndexKey: parts are positional
          <span key={i}>{part.text}</span>
        ),
      )}
    </span>
  );
}

export function CollectionSelect({
  name,
  label,
  choices,
  value,
  rootLabel,
  exclude,
}: {
  name: string;
  label: string;
  choices: Array<{ id: number; label: string }>;
  value: number | null;
  rootLabel: string;
  exclude?: number;
}) {
  return (
    <div className="field">
      <label htmlFor={`${name}-select`}>{label}</label>
      <select id={`${name}-select`} name={name} defaultValue={value === null ? '' : String(value)}>
        <option value="">{rootLabel}</option>
        {choices
          .filter((c) => c.id !== exclude)
          .map((c) => (
            <option key={c.id} value={c.id}>
              {c.label}
            </option>
          ))}
      </select>
    </div>
  );
}
