import { collectionPath } from '@quire/db/collections';
import { json, pathId, type RouteContext, readJson, withApi } from '@quire/web/lib/api';
import { collectionJson } from '@quire/web/lib/archiveHttp';
import { updateCollectionBody } from '@quire/web/lib/archiveSchemas';
import { pool } from '@quire/web/lib/server';
import { deleteCollection, requireCollection, updateCollection } from '@quire/web/services/archive';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; collectionId: string };

/** GET .../collections/{id} (F1): the collection, its counts and the path of its ancestors. */
export async function GET(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const id = pathId(params.collectionId, 'collectionId');
    const found = await requireCollection(principal, id);
    return json({
      ...collectionJson(found),
      path: await collectionPath(pool(), principal.workspaceId, id),
    });
  });
}

/**
 * PATCH .../collections/{id} (F1): rename, describe or move (`parentId`); a move under itself
 * or a descendant is 409 `collection_cycle`. Audited (M4).
 */
export async function PATCH(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const id = pathId(params.collectionId, 'collectionId');
    const body = await readJson(request, updateCollectionBody);
    return json(collectionJson(await updateCollection(principal, id, body)));
  });
}

/** DELETE .../collections/{id} (F1): an empty collection only (409 `collection_not_empty`). */
export async function DELETE(request: Request, context: RouteContext<Params>) {
  return withApi(request, context, async (principal, params) => {
    const id = pathId(params.collectionId, 'collectionId');
    await deleteCollection(principal, id);
    return json({ id, deleted: true });
  });
}
