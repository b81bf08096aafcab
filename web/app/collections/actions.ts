'use server';
import type { ErrorCode } from '@quire/core/errors';
import { metadataOf, refusedHref } from '@quire/web/lib/archiveForms';
import { createCollectionBody, updateCollectionBody } from '@quire/web/lib/archiveSchemas';
import { refusalOf } from '@quire/web/lib/errors';
import { requireAct } from '@quire/web/lib/session';
import { createCollection, deleteCollection, updateCollection } from '@quire/web/services/archive';
import { redirect } from 'next/navigation';

/**
 * F1: the console's forms for collections, through the same use cases as the API
 * (web/services/archive.ts) and the same schemas. A refusal comes back as `?error=<code>` on
 * the page the form was on, which says what it means; nothing was changed.
 */

function parentOf(form: FormData): number | null {
  const raw = String(form.get('parentId') ?? '');
  return /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : null;
}

const codeOf = (error: unknown): ErrorCode => refusalOf(error).code;

export async function createCollectionAction(form: FormData): Promise<void> {
  const principal = await requireAct('collection.create');
  const parentId = parentOf(form);
  const back = parentId === null ? '/' : `/collections/${parentId}`;
  const body = createCollectionBody.safeParse({
    title: String(form.get('title') ?? ''),
    description: String(form.get('description') ?? '') || null,
    parentId,
  });
  if (!body.success) redirect(refusedHref(back, 'invalid_collection'));
  let id: number | undefined;
  let error: ErrorCode | undefined;
  try {
    id = (await createCollection(principal, body.data)).id;
  } catch (e) {
    error = codeOf(e);
  }
  redirect(error ? refusedHref(back, error) : `/collections/${id}`);
}

export async function updateCollectionAction(form: FormData): Promise<void> {
  const principal = await requireAct('collection.update');
  const id = Number(form.get('collectionId'));
  const back = `/collections/${id}`;
  const metadata = metadataOf(form);
  const body = updateCollectionBody.safeParse({
    title: String(form.get('title') ?? ''),
    description: String(form.get('description') ?? '') || null,
    ...(metadata.success ? { metadata: metadata.data } : {}),
  });
  if (!body.success || !metadata.success) redirect(refusedHref(back, 'invalid_collection'));
  let error: ErrorCode | undefined;
  try {
    await updateCollection(principal, id, body.data);
  } catch (e) {
    error = codeOf(e);
  }
  redirect(error ? refusedHref(back, error) : `${back}?done=saved`);
}

export async function moveCollectionAction(form: FormData): Promise<void> {
  const principal = await requireAct('collection.update');
  const id = Number(form.get('collectionId'));
  const back = `/collections/${id}`;
  let error: ErrorCode | undefined;
  try {
    await updateCollection(principal, id, { parentId: parentOf(form) });
  } catch (e) {
    error = codeOf(e);
  }
  redirect(error ? refusedHref(back, error) : `${back}?done=moved`);
}

export async function deleteCollectionAction(form: FormData): Promise<void> {
  const principal = await requireAct('collection.delete');
  const id = Number(form.get('collectionId'));
  const parentId = parentOf(form);
  let error: ErrorCode | undefined;
  try {
    await deleteCollection(principal, id);
  } catch (e) {
    error = codeOf(e);
  }
  if (error) redirect(refusedHref(`/collections/${id}`, error));
  redirect(parentId === null ? '/?done=deleted' : `/collections/${parentId}?done=deleted`);
}
