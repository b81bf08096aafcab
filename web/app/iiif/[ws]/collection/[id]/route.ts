import { collectionResponse, iiifPreflight, manifestResponse } from '@quire/web/lib/iiif';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; id: string };

/**
 * GET /iiif/{ws}/collection/{id} (F1): a collection as a IIIF Presentation 3 Collection of
 * its sub-collections and its items' manifests; access as I1. `collection/manifest` is the
 * manifest of an item whose id is `collection` (collection ids are numbers).
 */
export async function GET(request: Request, context: { params: Promise<Params> }) {
  const { ws, id } = await context.params;
  if (id === 'manifest') return manifestResponse(request, { ws, item: 'collection' });
  return collectionResponse(request, { ws, id });
}

export async function HEAD(request: Request, context: { params: Promise<Params> }) {
  const response = await GET(request, context);
  return new Response(null, { status: response.status, headers: response.headers });
}

export function OPTIONS() {
  return iiifPreflight();
}
