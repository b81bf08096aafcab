import { iiifPreflight } from '@quire/web/lib/iiif';
import { imageBaseResponse } from '@quire/web/lib/iiifImage';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

type Params = { ws: string; pageId: string };

/** GET /iiif/{ws}/image/{pageId} (I4): the image service's base URI, a 303 to its info.json. */
export async function GET(request: Request, context: { params: Promise<Params> }) {
  return imageBaseResponse(request, await context.params);
}

export function OPTIONS() {
  return iiifPreflight();
}
