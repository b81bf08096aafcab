'use server';
import { iiifImportBody } from '@quire/web/lib/archiveSchemas';
import { refusalOf } from '@quire/web/lib/errors';
import { importIiif } from '@quire/web/lib/iiifImport';
import { requireAct } from '@quire/web/lib/session';
import { redirect } from 'next/navigation';

export interface IiifImportState {
  error: string | null;
  code: string | null;
}

/**
 * F8, the console's form for POST /iiif-imports: a manifest URL (and a collection, a title)
 * becomes an item, through the same import; on success the item's page opens. A refusal is
 * shown beside the form with its sentence; nothing was stored.
 */
export async function importIiifAction(
  _previous: IiifImportState,
  form: FormData,
): Promise<IiifImportState> {
  const principal = await requireAct('batch.create');
  const collection = String(form.get('collectionId') ?? '');
  const body = iiifImportBody.safeParse({
    manifestUrl: String(form.get('manifestUrl') ?? '').trim(),
    collectionId: /^[1-9][0-9]{0,15}$/.test(collection) ? Number(collection) : null,
    title: String(form.get('title') ?? '').trim() || null,
  });
  if (!body.success) {
    return { error: 'Give the http or https URL of a IIIF manifest.', code: 'iiif_invalid_url' };
  }
  let itemId: string | undefined;
  try {
    const result = await importIiif(principal, body.data, 'interactive');
    itemId = result.pages[0]?.itemId;
  } catch (error) {
    const refusal = refusalOf(error, 'The manifest could not be imported; try again.');
    return { error: refusal.message, code: refusal.code };
  }
  redirect(`/items/${encodeURIComponent(itemId ?? '')}?done=imported`);
}
