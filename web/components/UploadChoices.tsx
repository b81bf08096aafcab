'use client';
import type { EngineModel } from '@quire/core/engineModels';
import { useId, useState } from 'react';

/**
 * V9, F5: what an upload says of its items besides their files: the engine model and language
 * that read them (from the models this installation has), the collection they go in (whose
 * choices they inherit when none is made here), and the title of a single item.
 */
export interface UploadChoice {
  /** Index into the models listed; -1: the collection's choice, else the default engine. */
  model: number;
  /** For an engine that reads any language: the language asked for. */
  language: string;
  collectionId: string;
  title: string;
  /** F5: `Label: value` lines for every new item. */
  metadata: string;
  /** F5: a CSV sheet describing the items, one row per file, read in the browser. */
  sheet: { name: string; text: string } | null;
}

export const NO_CHOICE: UploadChoice = {
  model: -1,
  language: '',
  collectionId: '',
  title: '',
  metadata: '',
  sheet: null,
};

/** `Label: value` lines as the ingest's label/value pairs; lines without a colon are left out. */
function metadataEntries(text: string): Array<{ label: string; value: string }> {
  return text.split('\n').flatMap((line) => {
    const at = line.indexOf(':');
    const label = line.slice(0, at).trim();
    const value = line.slice(at + 1).trim();
    return at > 0 && label && value ? [{ label, value }] : [];
  });
}

export const ANY = '*';

/** One model as a person picks it: engine, language and script, with what was measured. */
export function modelLabel(m: EngineModel): string {
  const language = m.language === ANY ? 'any language' : m.language;
  const quality = m.quality ? ` (${m.quality})` : '';
  return `${m.provider} · ${language} · ${m.script}${quality}`;
}

/** The form fields the ingest reads for this choice. */
export function appendChoice(form: FormData, choice: UploadChoice, models: EngineModel[]): void {
  const chosen = models[choice.model];
  if (chosen) {
    form.set('provider', chosen.provider);
    if (chosen.language !== ANY) form.set('language', chosen.language);
    else if (choice.language.trim()) form.set('language', choice.language.trim());
  }
  if (choice.collectionId) form.set('collectionId', choice.collectionId);
  if (choice.title.trim()) form.set('title', choice.title.trim());
  const entries = metadataEntries(choice.metadata);
  if (entries.length > 0) form.set('descriptiveMetadata', JSON.stringify(entries));
  if (choice.sheet) form.set('descriptions', choice.sheet.text);
}

export function UploadChoices({
  models,
  collections,
  choice,
  single,
  onChange,
}: {
  models: EngineModel[];
  collections: { id: number; label: string }[];
  choice: UploadChoice;
  /** One item: its title may be given here. */
  single: boolean;
  onChange: (next: UploadChoice) => void;
}) {
  const id = useId();
  // Shown on demand: the upload's own file picker stays the page's first and only one.
  const [sheetOpen, setSheetOpen] = useState(false);
  const chosen = models[choice.model];
  return (
    <fieldset className="choices">
      <legend>Description and engine</legend>
      <label htmlFor={`${id}-model`}>Engine and language</label>
      <select
        id={`${id}-model`}
        name="model"
        value={choice.model}
        onChange={(e) => onChange({ ...choice, model: Number(e.target.value) })}
      >
        <option value={-1}>The collection's choice, else automatic (English print)</option>
        {models.map((m, i) => (
          <option key={`${m.provider}:${m.language}`} value={i}>
            {modelLabel(m)}
          </option>
        ))}
      </select>
      {chosen?.language === ANY ? (
        <>
          <label htmlFor={`${id}-language`}>Language</label>
          <input
            id={`${id}-language`}
            name="language"
            value={choice.language}
            placeholder="en, de, fr…"
            onChange={(e) => onChange({ ...choice, language: e.target.value })}
          />
        </>
      ) : null}
      <label htmlFor={`${id}-collection`}>Collection</label>
      <select
        id={`${id}-collection`}
        name="collectionId"
        value={choice.collectionId}
        onChange={(e) => onChange({ ...choice, collectionId: e.target.value })}
      >
        <option value="">None (the archive's root)</option>
        {collections.map((c) => (
          <option key={c.id} value={String(c.id)}>
            {c.label}
          </option>
        ))}
      </select>
      {single ? (
        <>
          <label htmlFor={`${id}-title`}>Title</label>
          <input
            id={`${id}-title`}
            name="title"
            value={choice.title}
            maxLength={500}
            onChange={(e) => onChange({ ...choice, title: e.target.value })}
          />
        </>
      ) : null}
      <label htmlFor={`${id}-metadata`}>Metadata for every item (one “Label: value” a line)</label>
      <textarea
        id={`${id}-metadata`}
        name="descriptiveMetadata"
        rows={3}
        value={choice.metadata}
        placeholder={'Creator: Immanuel Kant\nDate: 1784'}
        onChange={(e) => onChange({ ...choice, metadata: e.target.value })}
      />
      {sheetOpen ? (
        <>
          <label htmlFor={`${id}-sheet`}>
            Describe many items with a spreadsheet (CSV: a file or identifier column, Dublin Core
            names such as title, creator, date, language; other columns kept as they are)
          </label>
          <input
            id={`${id}-sheet`}
            type="file"
            accept=".csv,text/csv"
            onChange={async (e) => {
              const picked = e.target.files?.[0];
              onChange({
                ...choice,
                sheet: picked ? { name: picked.name, text: await picked.text() } : null,
              });
            }}
          />
        </>
      ) : (
        <button type="button" className="link" onClick={() => setSheetOpen(true)}>
          Describe many items with a spreadsheet (CSV)…
        </button>
      )}
      {choice.sheet ? <span className="muted small">Sheet: {choice.sheet.name}</span> : null}
    </fieldset>
  );
}
