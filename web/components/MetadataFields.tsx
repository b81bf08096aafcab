'use client';
import { DUBLIN_CORE_ELEMENTS, METADATA_LIMITS, type MetadataEntry } from '@quire/core/archive';
import { useRef, useState } from 'react';

interface Row extends MetadataEntry {
  key: number;
}

/**
 * F1 F2 C2: label/value rows with the Dublin Core names offered. A row is added when it is
 * needed ("Add row", focused at once) and removed the same way; blank rows are dropped when the
 * form is saved (web/lib/archiveForms.ts `metadataOf`).
 */
export function MetadataFields({ entries }: { entries: MetadataEntry[] }) {
  const next = useRef(0);
  const keyed = (e: MetadataEntry): Row => {
    next.current += 1;
    return { ...e, key: next.current };
  };
  const [rows, setRows] = useState<Row[]>(() =>
    (entries.length > 0 ? entries : [{ label: '', value: '' }]).map(keyed),
  );
  const [focusKey, setFocusKey] = useState<number | null>(null);
  const full = rows.length >= METADATA_LIMITS.entries;
  return (
    <fieldset className="metadata-rows">
      <legend>Metadata</legend>
      <datalist id="dublin-core">
        {DUBLIN_CORE_ELEMENTS.map((name) => (
          <option key={name} value={name} />
        ))}
      </datalist>
      {rows.map((row, i) => (
        <div className="input-row" key={row.key}>
          <input
            name="metaLabel"
            list="dublin-core"
            defaultValue={row.label}
            aria-label={`Metadata label ${i + 1}`}
            placeholder="Label (e.g. Creator)"
            ref={(el) => {
              if (el && focusKey === row.key) {
                el.focus();
                setFocusKey(null);
              }
            }}
          />
          <input
            name="metaValue"
            defaultValue={row.value}
            aria-label={`Metadata value ${i + 1}`}
            placeholder="Value"
          />
          <button
            type="button"
            className="secondary"
            aria-label={`Remove metadata row ${i + 1}`}
            onClick={() => setRows((current) => current.filter((r) => r.key !== row.key))}
          >
            Remove
          </button>
        </div>
      ))}
      <div>
        <button
          type="button"
          className="secondary"
          disabled={full}
          onClick={() => {
            const row = keyed({ label: '', value: '' });
            setRows((current) => [...current, row]);
            setFocusKey(row.key);
          }}
        >
          Add row
        </button>
      </div>
    </fieldset>
  );
}
