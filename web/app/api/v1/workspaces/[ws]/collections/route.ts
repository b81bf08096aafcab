import { json, type RouteContext, readJson, readQuery, withApi } from '@quire/web/lib/api';
import { collectionJson } from '@quire/web/lib/archiveHttp';
import { createCollectionBody, listCollectionsQuery } from '@quire/web/lib/archiveSchemas';
import { collectionPage, createCollection } from '@quire/web/services/archive';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** GET /api/v1/workspaces/{ws}/collections (F1, L1): one level of the tree, keyset-paged by id. */
export async function GET(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    const query = readQuery(request, listCollectionsQuery);
    const page = await collectionPage(principal, query);
    return json({
      collections: page.collections.map(collectionJson),
      nextPageToken: page.nextPageToken,
    });
  });
}

/** POST /api/v1/workspaces/{ws}/collections (F1): a new collection, audited (M4). */
export async function POST(request: Request, context: RouteContext<{ ws: string }>) {
  return withApi(request, context, async (principal) => {
    const body = await readJson(request, createCollectionBody);
    const created = await createCollection(principal, body);
    return json(collectionJson(created), {
      status: 201,
      headers: { Location: `${new URL(request.url).pathname}/${created.id}` },
    });
  });
}
