import {
  DUBLIN_CORE_ELEMENTS,
  type MetadataEntry,
  type Snippet,
  snippetParts,
} from '@quire/core/archive';
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

export function CollectionList({ collections }: { collections: CollectionSummary[] }) {
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
        </li>
      ))}
    </ul>
  );
}

export function ItemTable({ items, caption }: { items: ItemSummary[]; caption: string }) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Item</th>
            <th scope="col">Pages</th>
            <th scope="col">Progress</th>
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
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Label/value rows with the Dublin Core names offered; three blank rows to add more. */
export function MetadataFields({ entries }: { entries: MetadataEntry[] }) {
  const rows = [
    ...entries,
    { label: '', value: '' },
    { label: '', value: '' },
    { label: '', value: '' },
  ];
  return (
    <fieldset className="metadata-rows">
      <legend>Metadata</legend>
      <datalist id="dublin-core">
        {DUBLIN_CORE_ELEMENTS.map((name) => (
          <option key={name} value={name} />
        ))}
      </datalist>
      {rows.map((row, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: rows are positional form fields
        <div className="input-row" key={i}>
          <input
            name="metaLabel"
            list="dublin-core"
            defaultValue={row.label}
            aria-label={`Metadata label ${i + 1}`}
            placeholder="Label (e.g. Creator)"
          />
          <input
            name="metaValue"
            defaultValue={row.value}
            aria-label={`Metadata value ${i + 1}`}
            placeholder="Value"
          />
        </div>
      ))}
    </fieldset>
  );
}

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
