'use server';
import type { ErrorCode } from '@quire/core/errors';
import { listItemPages } from '@quire/db/items';
import { metadataOf, refusedHref } from '@quire/web/lib/archiveForms';
import { updateItemBody } from '@quire/web/lib/archiveSchemas';
import { refusalOf } from '@quire/web/lib/errors';
import { pool } from '@quire/web/lib/server';
import { requireAct } from '@quire/web/lib/session';
import { arrangePages, updateItem } from '@quire/web/services/archive';
import { redirect } from 'next/navigation';

/**
 * F2: the console's forms for an item (its description, its collection, the order of its
 * pages and moving a page to another item), through web/services/archive.ts. A refusal
 * comes back as `?error=<code>`; nothing was changed.
 */

const itemPath = (itemId: string) => `/items/${encodeURIComponent(itemId)}`;

const codeOf = (error: unknown): ErrorCode => refusalOf(error).code;

export async function updateItemAction(form: FormData): Promise<void> {
  const principal = await requireAct('item.update');
  const itemId = String(form.get('itemId') ?? '');
  const back = itemPath(itemId);
  const metadata = metadataOf(form);
  const collection = String(form.get('collectionId') ?? '');
  const language = String(form.get('language') ?? '').trim();
  const body = updateItemBody.safeParse({
    title: String(form.get('title') ?? '').trim() || null,
    language: language || null,
    collectionId: /^[1-9][0-9]{0,15}$/.test(collection) ? Number(collection) : null,
    ...(metadata.success ? { metadata: metadata.data } : {}),
  });
  if (!body.success || !metadata.success) redirect(refusedHref(back, 'invalid_item'));
  let error: ErrorCode | undefined;
  try {
    await updateItem(principal, itemId, body.data);
  } catch (e) {
    error = codeOf(e);
  }
  redirect(error ? refusedHref(back, error) : `${back}?done=saved`);
}

/** The order a form sent (`order`: page ids, comma-separated). */
function orderOf(form: FormData): number[] | undefined {
  const raw = String(form.get('order') ?? '');
  if (!/^[0-9]{1,15}(,[0-9]{1,15}){0,9999}$/.test(raw)) return undefined;
  return raw.split(',').map(Number);
}

export async function arrangePagesAction(form: FormData): Promise<void> {
  const principal = await requireAct('item.arrange');
  const itemId = String(form.get('itemId') ?? '');
  const back = itemPath(itemId);
  const order = orderOf(form);
  if (!order) redirect(refusedHref(back, 'invalid_order'));
  let error: ErrorCode | undefined;
  try {
    await arrangePages(principal, itemId, order);
  } catch (e) {
    error = codeOf(e);
  }
  redirect(error ? refusedHref(back, error) : `${back}?done=reordered`);
}

/** Moves one page to the end of another item (made when it does not exist yet). */
export async function movePageAction(form: FormData): Promise<void> {
  const principal = await requireAct('item.arrange');
  const itemId = String(form.get('itemId') ?? '');
  const pageId = Number(form.get('pageId'));
  const target = String(form.get('targetItemId') ?? '').trim();
  const back = itemPath(itemId);
  if (!target || target.length > 200 || target === itemId || !Number.isSafeInteger(pageId)) {
    redirect(refusedHref(back, 'invalid_target'));
  }
  let error: ErrorCode | undefined;
  try {
    const pages = await listItemPages(pool(), principal.workspaceId, target);
    await arrangePages(principal, target, [...pages.map((p) => p.pageId), pageId]);
  } catch (e) {
    error = codeOf(e);
  }
  redirect(error ? refusedHref(back, error) : `${back}?done=moved`);
}
