'use client';
import { type IiifImportState, importIiifAction } from '@quire/web/app/upload/actions';
import { useActionState, useId } from 'react';

/**
 * F8: import an item from a IIIF Presentation 2 or 3 manifest: its canvases become pages, its
 * transcriptions their first revision. Shown on the upload page to those who may upload.
 */
export function IiifImportForm({ collections }: { collections: { id: number; label: string }[] }) {
  const [state, action, pending] = useActionState<IiifImportState, FormData>(importIiifAction, {
    error: null,
    code: null,
  });
  const id = useId();
  return (
    <section aria-labelledby={`${id}-heading`} className="stack" data-testid="iiif-import">
      <h2 id={`${id}-heading`}>Import from a IIIF manifest</h2>
      <p className="muted">
        A IIIF Presentation 2 or 3 manifest becomes one item: each canvas a page, in order, its
        image fetched through the manifest's image service; the manifest's label and metadata
        describe the item. Transcriptions the manifest carries (text annotations, or ALTO, PAGE or
        hOCR files it links) become the pages' first revision; other pages get a job.
      </p>
      <form action={action} className="stack">
        <label htmlFor={`${id}-url`}>Manifest URL</label>
        <input
          id={`${id}-url`}
          name="manifestUrl"
          type="url"
          required
          maxLength={2000}
          placeholder="https://example.org/iiif/manifest.json"
        />
        <label htmlFor={`${id}-collection`}>Collection of the imported item</label>
        <select id={`${id}-collection`} name="collectionId" defaultValue="">
          <option value="">None (the archive's root)</option>
          {collections.map((c) => (
            <option key={c.id} value={String(c.id)}>
              {c.label}
            </option>
          ))}
        </select>
        <label htmlFor={`${id}-title`}>
          Title of the imported item (the manifest's label when empty)
        </label>
        <input id={`${id}-title`} name="title" maxLength={500} />
        <div className="actions">
          <button type="submit" disabled={pending}>
            {pending ? 'Importing…' : 'Import'}
          </button>
        </div>
        {state.error ? (
          <p role="alert" className="notice notice-error" data-code={state.code ?? undefined}>
            {state.error}
          </p>
        ) : null}
      </form>
    </section>
  );
}
