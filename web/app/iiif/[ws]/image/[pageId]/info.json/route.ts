import { iiifPreflight } from '@quire/web/lib/iiif';
import { imageInfoResponse } from '@quire/web/lib/iiifImage';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string };

/**
 * GET /iiif/{ws}/image/{pageId}/info.json (I4): the page's IIIF Image API 3 service
 * description (level 2: sizes, tiles), under the manifest's access rules.
 */
export async function GET(request: Request, context: { params: Promise<Params> }) {
  return imageInfoResponse(request, await context.params);
}

export async function HEAD(request: Request, context: { params: Promise<Params> }) {
  const response = await imageInfoResponse(request, await context.params);
  return new Response(null, { status: response.status, headers: response.headers });
}

export function OPTIONS() {
  return iiifPreflight();
}
