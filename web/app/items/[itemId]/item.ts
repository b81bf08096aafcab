import 'server-only';
import { textFault } from '@quire/core/text';
import { getItem } from '@quire/db/items';
import { pool } from '@quire/web/lib/server';
import { requirePrincipal } from '@quire/web/lib/session';
import { notFound } from 'next/navigation';

/**
 * The item a console page under `/items/{itemId}` shows, in the signed-in person's workspace:
 * sign-in first (a redirect), and a not-found for an id that names no item of the workspace.
 */
export async function loadItem(raw: string) {
  const principal = await requirePrincipal();
  let itemId: string;
  try {
    itemId = decodeURIComponent(raw);
  } catch {
    notFound();
  }
  // R6: a NUL or lone surrogate names no item (and PostgreSQL would refuse it).
  if (itemId.length < 1 || itemId.length > 200 || textFault(itemId)) notFound();
  const item = await getItem(pool(), principal.workspaceId, itemId);
  if (!item) notFound();
  return { principal, item };
}
