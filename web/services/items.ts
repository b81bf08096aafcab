import 'server-only';
import type { Principal } from '@quire/core/roles';
import { deleteItem as deleteItemRows } from '@quire/db/items';
import { pool } from '@quire/web/lib/server';
import { actorOf, requireAction } from './access';

/** U3: deleting an item, children first in one transaction (db/items.ts), audited (R10). */
export async function deleteItem(principal: Principal, itemId: string) {
  requireAction(principal, 'item.delete');
  return deleteItemRows(pool(), principal.workspaceId, itemId, actorOf(principal));
}
