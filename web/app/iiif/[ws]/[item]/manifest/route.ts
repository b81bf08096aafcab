import { iiifPreflight, manifestResponse } from '@quire/web/lib/iiif';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; item: string };

/**
 * GET /iiif/{ws}/{item}/manifest (I1): the item's IIIF Presentation 3 manifest. Published
 * pages are public; the workspace's key or console session sees drafts; otherwise 404.
 */
export async function GET(request: Request, context: { params: Promise<Params> }) {
  return manifestResponse(request, await context.params);
}

export async function HEAD(request: Request, context: { params: Promise<Params> }) {
  const response = await manifestResponse(request, await context.params);
  return new Response(null, { status: response.status, headers: response.headers });
}

export function OPTIONS() {
  return iiifPreflight();
}
